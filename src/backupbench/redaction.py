"""The one owner of secrets in text: whatever backupbench prints, logs or stores passes here.

Three kinds of secret are hidden:
- the userinfo of a URL (`http://user:secret@host:9000` is shown `http://***@host:9000`),
  whoever wrote it and wherever it appears in the text: a URL with credentials is refused
  as input, and the refusal itself must not show them;
- the query and the fragment of a URL, whole (`http://h:9000/b?X-Amz-Signature=...#t` is
  shown `http://h:9000/b?****`): see _URL_QUERY for why all of them;
- values known to be secret: the ones a caller passes, and the ones remembered for the
  process (S3 keys from options, the environment or a profile; a MinIO's root password),
  shown `****`.

The messages of errors, the `--json` error document, `--debug` logs and tracebacks, command
lines (process.py), tool output quoted in errors, and the text columns of the results store
all go through `redact`. A message quoting a value given as one URL (an endpoint, an agent's
address, a recipe value of such a key) quotes `redact_url`'s or `redact_value`'s form of it:
`redact` sees words, and such a value may hold a space or lack its scheme.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
from typing import Iterable, Sequence

HIDDEN = "****"
HIDDEN_USERINFO = "***"
# What may follow `scheme://` up to the last '@' of one word: a password may hold '/', ':'
# or '@' typed unescaped, so the whole stretch is hidden (a path with '@' in it is hidden
# too: more than needed, never less).
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,30}://)[^\s'\"<>`]*@")
# `user:password@host` without a scheme (as --hosts or --agents could be mistyped); the
# password, again, up to the word's last '@'.
_BARE_USERINFO = re.compile(r"(?<![\w.%+:/@-])[\w.%+-]{1,256}:(?!//)[^\s'\"<>`]*@(?=[\w\[])")
# A URL's query and fragment, from the first '?' or '#' after `scheme://host` to the end of the
# word. All of it, not the values of parameters with secret-sounding names: the names vary
# (X-Amz-Signature, X-Amz-Credential, X-Amz-Security-Token, sig, token, key, code, ...), a
# query need not be name=value pairs at all (`?S`), and a fragment is free text (an OAuth
# `#access_token=`). No URL backupbench needs to show has either: an endpoint is
# scheme://host:port (one with a query or fragment is refused), and what an S3 error names is
# the bucket and key, which are in the path. The path is kept: it is what messages are about,
# and S3 carries no credential there. The host may be any word (prose such as "(http:// vs
# https://)?" has none); the word's end is whitespace (a quote may be inside a query);
# closing punctuation at its end is kept, as the quote around a repr'd URL.
_URL_QUERY = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]{0,30}://[^\s/?#()'\"<>`][^\s?#]*)([?#]\S+)")
# A query without a scheme before it (`h:9000/?token=S`, a mistyped endpoint or agent): a '?'
# inside a word and followed by name= (a '?' in prose ends a word or is followed by a space).
_BARE_QUERY = re.compile(r"(?<=[^\s?])(\?[\w.~%+-]+=\S*)")
_SCHEME = re.compile(r"(?i)\b[a-z][a-z0-9+.-]{0,30}://")
_CLOSING = re.compile(r"""['"`)\]}>,;:.!]+$""")
HIDDEN_QUERY = "****"
# Flags whose next argument is a secret (a command line as process.py logs it).
SECRET_FLAGS = ("--secret-key", "--access-key", "--password", "--secret")

# A key or field whose name holds one of these carries a secret: its value is never shown.
SECRET_KEY_WORDS = ("secret", "password", "access_key", "token", "credential")

# A key or flag whose name holds one of these takes a URL or an address: its value is quoted
# as one URL (redact_url), scheme or not.
URL_KEY_WORDS = ("endpoint", "url", "agents", "hosts")

# Shorter values are not remembered: hiding every "a" or "key" in every text would garble it
# (the values passed to `redact` with the text it quotes are hidden whatever their length).
MIN_REMEMBERED_CHARS = 8

_known: set[str] = set()
_known_lock = threading.Lock()


def remember(*values: str | None) -> None:
    """Hide these values in every text redacted from now on, for the life of the process."""
    with _known_lock:
        _known.update(v for v in values if v and len(v) >= MIN_REMEMBERED_CHARS)


def _known_values() -> list[str]:
    with _known_lock:
        # Longest first: a secret that contains another is hidden whole.
        return sorted(_known, key=len, reverse=True)


def is_secret_key(name: object) -> bool:
    """Whether a key, field or flag name (`secret_key`, `--access-key`) names a secret."""
    text = str(name).lower().replace("-", "_")
    return any(word in text for word in SECRET_KEY_WORDS)


def _hidden_tail(tail: str) -> str:
    """A query or fragment ('?...' or '#...') hidden, the punctuation closing it kept."""
    closing = _CLOSING.search(tail[1:])
    kept = closing.group(0) if closing else ""
    secret = tail[1:len(tail) - len(kept)]
    return f"{tail[0]}{HIDDEN_QUERY}{kept}" if secret else tail


def redact(text: str, secrets: Iterable[str] = (), *, bare: bool = True) -> str:
    """`text` with every URL's userinfo, query and fragment and every secret value (given or
    remembered) hidden. bare: `user:password@host` and `?name=value` without a scheme too
    (messages; data such as a label may legitimately look like that, so data is redacted
    without them)."""
    if not text:
        return text
    for value in sorted({s for s in secrets if s} | set(_known_values()), key=len, reverse=True):
        text = text.replace(value, HIDDEN)
    text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{HIDDEN_USERINFO}@", text)
    text = _URL_QUERY.sub(lambda m: m.group(1) + _hidden_tail(m.group(2)), text)
    if not bare:
        return text
    text = _BARE_USERINFO.sub(f"{HIDDEN_USERINFO}@", text)
    return _BARE_QUERY.sub(lambda m: _hidden_tail(m.group(1)), text)


def redact_url(text: str) -> str:
    """A text given as one URL (an --endpoint, an agent's address), for a message that quotes
    it: `redact`, then everything from its first '?' or '#' hidden whether or not it has a
    scheme (whatever follows either there is a query or a fragment) and up to the end, spaces
    and all (the end of the text, not of a word, is the end of the URL)."""
    shown = redact(text)
    cut = min((i for i in (shown.find("?"), shown.find("#")) if i >= 0), default=len(shown))
    return shown[:cut] + (f"{shown[cut]}{HIDDEN_QUERY}" if cut < len(shown) else "")


def is_url_key(name: object) -> bool:
    """Whether a key, field or flag name (`endpoint`, `--agents`) takes a URL or address."""
    text = str(name).lower().replace("-", "_")
    return any(word in text for word in URL_KEY_WORDS)


def redact_value(text: str, key: object = None) -> str:
    """One value given whole (a flag's, a recipe key's), for a message that echoes it: as one
    URL (`redact_url`) if its key takes one or it holds `scheme://`, since such a value ends at
    the value's end, not at a space, and a mistyped one may lack its scheme; else `redact`."""
    return redact_url(text) if (key is not None and is_url_key(key)) or _SCHEME.search(text) else redact(text)


def redact_argv(argv: Sequence[str], secrets: Iterable[str] = ()) -> list[str]:
    """A command line with the argument after each secret flag hidden, and each argument redacted."""
    values = [s for s in secrets if s]
    masked: list[str] = []
    hide_next = False
    for arg in argv:
        masked.append(HIDDEN if hide_next else redact(arg, values))
        hide_next = not hide_next and arg in SECRET_FLAGS
    return masked


def redact_data(value: object, secrets: Iterable[str] = ()) -> object:
    """Every string inside a JSON-like value (dicts, lists) redacted, keys too (bare=False:
    see `redact`)."""
    values = [s for s in secrets if s]
    if isinstance(value, str):
        return redact(value, values, bare=False)
    if isinstance(value, dict):
        return {redact(k, values, bare=False) if isinstance(k, str) else k: redact_data(v, values)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(v, values) for v in value]
    return value


class RedactingFilter(logging.Filter):
    """A logging filter that redacts each record's text (the `--debug` log)."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        cleaned = redact(text)
        if cleaned != text:
            record.msg, record.args = cleaned, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True


def redact_logging(logger: logging.Logger | None = None) -> None:
    """Every handler of `logger` (the root one by default) redacts what it writes."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


class RedactedStream:
    """sys.stdout or sys.stderr (whichever is current when written to: tests swap them) with
    every text written redacted: the consoles the CLI prints tables and progress through."""

    def __init__(self, name: str):
        self._name = name

    def write(self, text: str) -> int:
        getattr(sys, self._name).write(redact(text))
        return len(text)

    def __getattr__(self, attribute: str) -> object:
        return getattr(getattr(sys, self._name), attribute)
