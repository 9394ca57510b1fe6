"""redaction.py: the one owner of secrets in text."""

from __future__ import annotations

import io
import logging
import sys

import pytest

from backupbench import redaction
from backupbench.redaction import (RedactedStream, RedactingFilter, is_secret_key, redact, redact_argv, redact_data,
                                   remember)


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
