"""The one owner of secrets in text: whatever backupbench prints, logs or stores passes here.

Two kinds of secret are hidden:
- the userinfo of a URL (`http://user:secret@host:9000` is shown `http://***@host:9000`),
  whoever wrote it and wherever it appears in the text: a URL with credentials is refused
  as input, and the refusal itself must not show them;
- values known to be secret: the ones a caller passes, and the ones remembered for the
  process (S3 keys from options, the environment or a profile; a MinIO's root password),
  shown `****`.

The messages of errors, the `--json` error document, `--debug` logs and tracebacks, command
lines (process.py), tool output quoted in errors, and the text columns of the results store
all go through `redact`.
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
# Flags whose next argument is a secret (a command line as process.py logs it).
SECRET_FLAGS = ("--secret-key", "--access-key", "--password", "--secret")

# A key or field whose name holds one of these carries a secret: its value is never shown.
SECRET_KEY_WORDS = ("secret", "password", "access_key", "token", "credential")

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


def redact(text: str, secrets: Iterable[str] = (), *, bare: bool = True) -> str:
    """`text` with every URL's userinfo and every secret value (given or remembered) hidden.
    bare: `user:password@host` without a scheme too (messages; data such as a label may
    legitimately look like that, so data is redacted without it)."""
    if not text:
        return text
    for value in sorted({s for s in secrets if s} | set(_known_values()), key=len, reverse=True):
        text = text.replace(value, HIDDEN)
    text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{HIDDEN_USERINFO}@", text)
    return _BARE_USERINFO.sub(f"{HIDDEN_USERINFO}@", text) if bare else text


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
