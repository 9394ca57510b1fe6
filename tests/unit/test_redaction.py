"""redaction.py: the one owner of secrets in text."""

from __future__ import annotations

import io
import logging
import sys

import pytest

from backupbench import redaction
from backupbench.redaction import (RedactedStream, RedactingFilter, is_secret_key, is_url_key, redact, redact_argv,
                                   redact_data, redact_url, redact_value, remember)


@pytest.mark.parametrize("text, shown", [
    ("http://user:secret@host:9000", "http://***@host:9000"),
    ("got 'https://AKIA:se/cr+et@s3.example.com' here", "got 'https://***@s3.example.com' here"),
    ("HTTP://u:p@ss@10.0.0.5:9000/x", "HTTP://***@10.0.0.5:9000/x"),
    ("two: http://a:b@h1 and http://c:d@h2", "two: http://***@h1 and http://***@h2"),
    ("--hosts 'root:hunter22@10.0.0.5'", "--hosts '***@10.0.0.5'"),
    ("http://127.0.0.1:9000/bucket", "http://127.0.0.1:9000/bucket"),  # nothing to hide
])
def test_userinfo_is_hidden_wherever_it_is(text, shown):
    assert redact(text) == shown


def test_data_keeps_what_only_looks_like_userinfo():
    # A label or a file name may be "db:prod@site"; only a URL's userinfo is hidden in data.
    assert redact("db:prod@site", bare=False) == "db:prod@site"
    assert redact_data({"label": "db:prod@site", "url": ["http://u:p@h"], "n": 3}) == \
        {"label": "db:prod@site", "url": ["http://***@h"], "n": 3}
    assert redact("/srv/a:b@c/file") == "/srv/a:b@c/file"  # a path component is no userinfo


def test_remembered_values_are_hidden_in_every_text_after(monkeypatch):
    monkeypatch.setattr(redaction, "_known", set())
    remember("s3cr3t-remembered-value", "short", None)
    assert redact("key s3cr3t-remembered-value, short") == "key ****, short"
    # A value passed with the text is hidden whatever its length.
    assert redact("a short one", ["short"]) == "a **** one"


def test_command_lines_hide_the_argument_of_a_secret_flag():
    argv = ["tool", "--secret-key", "abc", "--endpoint", "http://u:p@h", "--x", "token123"]
    assert redact_argv(argv, ["token123"]) == ["tool", "--secret-key", "****", "--endpoint", "http://***@h",
                                               "--x", "****"]


def test_secret_key_names():
    assert all(is_secret_key(name) for name in ("secret_key", "--access-key", "AWS_SESSION_TOKEN", "password"))
    assert not any(is_secret_key(name) for name in ("endpoint", "bucket", "object_size"))


def test_the_debug_log_is_redacted():
    stream = io.StringIO()
    logger = logging.getLogger("backupbench.test_redaction")
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter())
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("connecting to %s", "http://u:planted@h:9000")
        try:
            raise ValueError("http://u:planted@h:9000")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    assert "planted" not in stream.getvalue() and "http://***@h:9000" in stream.getvalue()


def test_a_redacted_stream_writes_to_the_current_stream(monkeypatch):
    captured = io.StringIO()
    monkeypatch.setattr(sys, "stdout", captured)
    stream = RedactedStream("stdout")
    stream.write("endpoint http://u:planted@h\n")
    assert captured.getvalue() == "endpoint http://***@h\n"
    assert stream.isatty() is False  # everything else is the real stream's


@pytest.mark.parametrize("endpoint", ["http://user:planted-pw@127.0.0.1:9000", "http://k:planted/pw@h:9000/path",
                                      "https://planted-pw@h"])
def test_an_endpoint_with_credentials_is_refused_without_quoting_them(endpoint):
    from backupbench.cli.options import build
    from backupbench.errors import RecipeError
    from backupbench.workloads.s3_options import S3Options

    with pytest.raises(RecipeError) as caught:
        build(S3Options, {"endpoint": endpoint, "bucket": "bucket-x"})
    message = caught.value.one_line()
    assert "must not carry credentials" in message and "***@" in message and "planted" not in message
    assert "planted" not in str(caught.value.__cause__)  # a --debug traceback quotes no input either


@pytest.mark.parametrize("hosts", ["root:pw-planted@10.0.0.5", "10.0.0.5,root:pw,planted@h", "planted@10.0.0.5:8765"])
def test_hosts_with_credentials_are_refused_without_quoting_them(hosts):
    from backupbench.engines.fio_client import parse_hosts
    from backupbench.errors import InputError

    with pytest.raises(InputError) as caught:
        parse_hosts(hosts)
    assert "must not carry credentials" in caught.value.one_line() and "planted" not in caught.value.one_line()


# ---- a URL's query and fragment (issue 37) -------------------------------------------------------

PLANTED = "PLANTEDqry0123456789"


@pytest.mark.parametrize("text, shown", [
    (f"http://h:9000/?secret={PLANTED}", "http://h:9000/?****"),
    (f"http://h:9000/#{PLANTED}", "http://h:9000/#****"),
    (f"https://h?X-Amz-Signature={PLANTED}&X-Amz-Date=1", "https://h?****"),
    (f"got 'http://h:9000/b/k?token={PLANTED}'); then", "got 'http://h:9000/b/k?****'); then"),
    (f'Get "http://127.0.0.1:9000/b/?list-type=2&password={PLANTED}": dial tcp', 'Get "http://127.0.0.1:9000/b/?****": dial tcp'),
    (f"http://u:p@h/?a={PLANTED}#x", "http://***@h/?****"),
    (f"HTTP://[fd00::5]:9000?{PLANTED}", "HTTP://[fd00::5]:9000?****"),
    (f"s3 at http://h/?sig=a'{PLANTED}, then", "s3 at http://h/?****, then"),
    (f"port '9000/?token={PLANTED}' is", "port '9000/?****' is"),            # no scheme, a query
    ("http://h:9000/bucket", "http://h:9000/bucket"),                       # nothing to hide
    ("is it S3 (http:// vs https://)? and #37?", "is it S3 (http:// vs https://)? and #37?"),
    ("did you mean --endpoint? a=b", "did you mean --endpoint? a=b"),
    ("http://h/? and http://h/#", "http://h/? and http://h/#"),
])
def test_a_urls_query_and_fragment_are_hidden_whole(text, shown):
    assert redact(text) == shown


def test_a_urls_query_is_hidden_in_data_commands_and_logs_too():
    url = f"http://h:9000/?token={PLANTED}"
    assert redact_data({"endpoint": url, "notes": [f"at {url}"]}) == {"endpoint": "http://h:9000/?****",
                                                                      "notes": ["at http://h:9000/?****"]}
    assert redact_argv(["s3load", "--endpoint", url]) == ["s3load", "--endpoint", "http://h:9000/?****"]
    stream = io.StringIO()
    logger = logging.getLogger("backupbench.test_redaction.query")
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter())
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("connecting to %s", url)
    finally:
        logger.removeHandler(handler)
    assert PLANTED not in stream.getvalue() and "http://h:9000/?****" in stream.getvalue()


@pytest.mark.parametrize("text, shown", [
    (f"http://h/?s=a {PLANTED}", "http://h/?****"),          # a space is no end: the text is one URL
    (f"h:9000#{PLANTED}", "h:9000#****"),                    # nor is a missing scheme
    (f"h:9000/x?{PLANTED}#{PLANTED}", "h:9000/x?****"),
    (f"http://u:p?ss@h/?{PLANTED}", "http://***@h/?****"),   # the userinfo first, whatever it holds
    ("http://h:9000", "http://h:9000"),
])
def test_a_text_given_as_one_url_is_hidden_from_its_first_query_or_fragment(text, shown):
    assert redact_url(text) == shown
    assert redact_value(text, "endpoint") == shown


def test_a_value_is_quoted_as_a_url_when_its_key_takes_one_or_it_has_a_scheme():
    assert redact_value(f"/srv/a#{PLANTED}", "path") == f"/srv/a#{PLANTED}"
    assert redact_value(f"h:1#{PLANTED}", "--agents") == "h:1#****"
    assert redact_value(f"x http://h/?a {PLANTED}") == "x http://h/?****"
    assert is_url_key("endpoint") and is_url_key("--agents") and not is_url_key("bucket")


@pytest.mark.parametrize("endpoint", [f"http://127.0.0.1:9000/?secret={PLANTED}", f"http://127.0.0.1:9000/#{PLANTED}",
                                      f"127.0.0.1:9000/?token={PLANTED}", f"127.0.0.1:9000#{PLANTED}",
                                      f"http://127.0.0.1:9000/?p=a {PLANTED}", f" http://h/?X-Amz-Signature={PLANTED} "])
def test_an_endpoint_with_a_query_or_fragment_is_refused_without_quoting_it(endpoint):
    from backupbench.cli.options import build
    from backupbench.errors import RecipeError
    from backupbench.workloads.s3_options import S3Options

    with pytest.raises(RecipeError) as caught:
        build(S3Options, {"endpoint": endpoint, "bucket": "bucket-x"})
    message = caught.value.one_line()
    assert "****" in message and "PLANTED" not in message, message
    assert "PLANTED" not in str(caught.value.__cause__)
