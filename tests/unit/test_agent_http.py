"""The agent's HTTP gate read from bytes (agent/http_head.py) and its TLS pieces (agent/tls.py):
what is refused before a byte of a body is read, how fingerprints are written, how a controller
chooses to trust agents. Certificates are made with openssl in the test's own folder."""

from __future__ import annotations

import http.client
import io
import json
import os
import subprocess

import pytest

from backupbench.agent.http_head import (MAX_HEAD_BYTES, Refusal, answer_bytes, authenticated, head_end, raw_fields,
                                         screen)
from backupbench.agent.protocol import MAX_BODY_BYTES
from backupbench.agent.tls import (CA, FINGERPRINT, PLAIN, RECIPE_NAMES, SYSTEM, Trust, cert_fingerprint,
                                   parse_fingerprint, server_context)
from backupbench.errors import InputError, RefusedError
from tls_support import Authority, self_signed

TOKEN = b"0123456789abcdef0123456789abcdef"


def head(request_line: str = "POST /v1 HTTP/1.1", **headers: str) -> bytes:
    # Host, as every HTTP/1.1 client sends it: h11 refuses a 1.1 request without one (RFC 9112, 3.2).
    fields = {"Host": "agent", "Authorization": f"Bearer {TOKEN.decode()}", "Content-Length": "2",
              **{name.replace("_", "-"): value for name, value in headers.items()}}
    lines = [request_line, *(f"{name}: {value}" for name, value in fields.items() if value is not None)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


def status_of(data: bytes) -> int:
    with pytest.raises(Refusal) as caught:
        screen(data, TOKEN)
    assert "\n" not in caught.value.message
    return caught.value.status


def test_an_authenticated_post_gives_its_body_length():
    assert screen(head(), TOKEN) == 2
    assert screen(head(Content_Length=str(MAX_BODY_BYTES)), TOKEN) == MAX_BODY_BYTES


def test_path_then_method_then_token_then_length_are_checked_in_that_order():
    assert status_of(head("POST /v2 HTTP/1.1", Authorization="Bearer wrong")) == 404
    assert status_of(head("GET /v1 HTTP/1.1", Authorization="Bearer wrong")) == 405
    assert status_of(head(Authorization="Bearer wrong", Content_Length="x")) == 401
    assert status_of(head(Authorization=None)) == 401
    assert status_of(head(Authorization=f"Basic {TOKEN.decode()}")) == 401
    assert status_of(head(Content_Length=None)) == 411
    assert status_of(head(Content_Length=str(MAX_BODY_BYTES + 1))) == 413
    assert status_of(head(Transfer_Encoding="chunked")) == 400


@pytest.mark.parametrize("length", ["-1", "+2", "2 2", "0x10", "\u0662", "", "1e3", "2.0", "2\x0b", "\xa02",
                                    "2\x00", "NaN"])
def test_a_length_that_is_not_plain_ascii_digits_is_refused(length):
    assert status_of(head(Content_Length=length)) == 400


# Issue 37: 11 digits were answered 400 "not a number"; a number over the bound is 413 however long.
@pytest.mark.parametrize("length", [str(MAX_BODY_BYTES + 1), "9999999999", "99999999999", "1" + "0" * 30,
                                    "9" * 5000, "0" * 40 + str(MAX_BODY_BYTES + 1)])
def test_a_length_over_the_bound_is_too_large_however_many_digits(length):
    assert status_of(head(Content_Length=length)) == 413


@pytest.mark.parametrize("length, read", [("0", 0), ("0000000000002", 2), (" 2", 2), ("2\t", 2),
                                          ("0" * 13 + str(MAX_BODY_BYTES), MAX_BODY_BYTES)])
def test_a_length_in_range_is_read_whatever_its_leading_zeros(length, read):
    assert screen(head(Content_Length=length), TOKEN) == read


# h11 reads at most 20 digits as a Content-Length: more is 400 unless the number is too large (413).
def test_a_length_in_range_past_20_digits_is_no_length_to_h11():
    assert status_of(head(Content_Length="0" * 40 + str(MAX_BODY_BYTES))) == 400
    assert status_of(head(Content_Length="0" * 40 + str(MAX_BODY_BYTES + 1))) == 413


# ---- what h11 refuses once the token has passed ----------------------------------------------------

@pytest.mark.parametrize("data", [
    head(Host=None),                                                       # HTTP/1.1 without Host
    head(Transfer_Encoding="gzip"), head(Transfer_Encoding="chunked", Content_Length=None),
    head().replace(b"Host: agent", b"Host: a\x00b"),                      # NUL in a value
    head().replace(b"\r\nHost", b"\r\nX: 1\nHost"),                       # a bare LF inside the head
    head().replace(b"\r\nHost", b"\r\nX: 1\nAuthorization: Bearer x\r\nHost"),  # a field behind one
    head().replace(b"\r\nHost: agent", b"\r\nX: 1\n\nContent-Length: 9"),  # a head ended early by a bare LF
    head().replace(b"Content-Length: 2", b"Content-Length: 2, 3"),
    head().replace(b"\r\n\r\n", b"\r\nX Y: 1\r\n\r\n"),                       # a space in a field name
])
def test_what_h11_refuses_is_400(data):
    assert status_of(data) == 400


def test_h11_must_read_the_token_alone_too():
    folded = head().replace(TOKEN + b"\r\n", TOKEN + b"\r\n more\r\n")   # h11 unfolds it: `Bearer TOKEN more`
    assert status_of(folded) == 401


# ---- the token: `Bearer`, one space, the token, byte for byte ----------------------------------

def raw_head(field: bytes) -> bytes:
    """A head whose Authorization line is `field` as bytes, not re-encoded."""
    return (b"POST /v1 HTTP/1.1\r\nContent-Length: 2\r\n" + field + b"\r\nHost: agent\r\n\r\n")


# Every spelling that only adds, removes or swaps whitespace or an invisible character. Each
# is refused in UTF-8 and in Latin-1 (http.client decodes a head as Latin-1, so \xa0 and \x85
# are one byte in one and two in the other).
WHITESPACE = [" ", "\t", "\x0b", "\x0c", "\r", "\x00", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\xa0",
              "\u1680", "\u2000", "\u2007", "\u200b", "\u2028", "\u2029", "\u202f", "\u3000", "\ufeff"]
BAD_FIELDS = sorted({
    *(f"Authorization: Bearer {TOKEN.decode()}{w}" for w in WHITESPACE),         # trailing
    *(f"Authorization: Bearer {w}{TOKEN.decode()}" for w in WHITESPACE),         # two spaces, or one and more
    *(f"Authorization: Bearer{w}{TOKEN.decode()}" for w in WHITESPACE if w != " "),  # another space
    *(f"Authorization: {w}Bearer {TOKEN.decode()}" for w in WHITESPACE),         # leading
    *(f"Authorization:{w}Bearer {TOKEN.decode()}" for w in WHITESPACE if w != " "),
    *(f"Authorization: Bearer {TOKEN.decode()[:16]}{w}{TOKEN.decode()[16:]}" for w in WHITESPACE),
    f"Authorization: Bearer {TOKEN.decode()}  ", f"Authorization:  Bearer  {TOKEN.decode()}",
    f"Authorization: Bearer\r\n {TOKEN.decode()}",                                # a folded line
    f"Authorization: bearer {TOKEN.decode()}", f"Authorization: BEARER {TOKEN.decode()}",
    f"Authorization: Bearer {TOKEN.decode()[:-1]}", f"Authorization: Bearer {TOKEN.decode()}0",
    f"Authorization: Bearer {TOKEN.decode().upper()}", f"Authorization: {TOKEN.decode()}",
    f"Authorization: Basic {TOKEN.decode()}", f"Authorization: Bearer={TOKEN.decode()}",
    f"Authorization : Bearer {TOKEN.decode()}", f"X-Authorization: Bearer {TOKEN.decode()}",
    f"Authorization\t: Bearer {TOKEN.decode()}",
})


def encoded(lines: list[str], encoding: str) -> list[bytes]:
    found = []
    for line in lines:
        try:
            found.append(line.encode(encoding))
        except UnicodeEncodeError:
            continue  # a character Latin-1 has not: the UTF-8 run sends it
    return found


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
def test_only_the_exact_field_passes_the_token_check(encoding):
    passed = []
    for line in encoded(BAD_FIELDS, encoding):
        try:
            screen(raw_head(line), TOKEN)
            passed.append(line)
        except Refusal as refusal:
            assert refusal.status in (400, 401), (line, refusal.status)
    assert passed == []


@pytest.mark.parametrize("line", [f"Authorization: Bearer {TOKEN.decode()}", f"authorization: Bearer {TOKEN.decode()}",
                                  f"AUTHORIZATION:Bearer {TOKEN.decode()}"])
def test_the_field_name_is_any_case_and_its_one_space_may_be_left_out(line):
    assert screen(raw_head(line.encode()), TOKEN) == 2


def test_the_token_check_is_one_comparison_of_the_raw_value():
    assert authenticated(b" Bearer " + TOKEN, TOKEN) and authenticated(b"Bearer " + TOKEN, TOKEN)
    for given in (None, b"", b"Bearer", b"Bearer ", TOKEN, b"Bearer  " + TOKEN, b"Bearer " + TOKEN + b" ",
                  b"  Bearer " + TOKEN, b"Token " + TOKEN, b"Bearer " + TOKEN + b"\xc2\xa0"):
        assert not authenticated(given, TOKEN), given
    assert raw_fields(b"Host: a\r\nAuthorization: x\r\nauthorization:y\r\nX-Authorization: z\r\n\r\n",
                      b"authorization") == [b" x", b"y"]
    # Only CRLF ends a line: a field hidden behind a bare LF or CR is no field.
    assert raw_fields(b"X: a\nAuthorization: x\r\nY: b\rAuthorization: y\r\n", b"authorization") == []


def test_a_header_given_twice_is_refused():
    data = head().replace(b"\r\n\r\n", b"\r\nContent-Length: 5\r\n\r\n")
    assert status_of(data) == 400
    twice = head().replace(b"\r\n\r\n", f"\r\nAuthorization: Bearer {TOKEN.decode()}\r\n\r\n".encode())
    assert status_of(twice) == 400


@pytest.mark.parametrize("line", ["POST /v1", "POST /v1 HTTP/2.0", "post /v1 HTTP/1.1", "POST  /v1 HTTP/1.1",
                                  "POST /v1 HTTP/1.1 extra", "\x16\x03\x01"])
def test_anything_but_an_http1_request_line_is_refused(line):
    assert status_of(head(line)) == 400


def test_the_head_ends_at_the_blank_line_and_is_bounded():
    data = head() + b"{}"
    assert head_end(data) == len(data) - 2
    assert head_end(head()[:-2]) == -1
    assert head_end(b"x" * MAX_HEAD_BYTES) == -1
    with pytest.raises(Refusal) as caught:
        head_end(b"x" * (MAX_HEAD_BYTES + 1))
    assert caught.value.status == 431
    many = head().replace(b"\r\n\r\n", b"".join(b"\r\nX-%d: 1" % n for n in range(150)) + b"\r\n\r\n")
    assert status_of(many) == 431


def test_an_answer_is_whole_http_that_a_client_reads():
    data = answer_bytes(409, {"error": "busy"})

    class Sock:
        def makefile(self, mode):
            return io.BytesIO(data)

    response = http.client.HTTPResponse(Sock())  # type: ignore[arg-type]
    response.begin()
    assert response.status == 409 and response.getheader("Connection") == "close"
    assert json.loads(response.read()) == {"error": "busy"}


# ---- TLS ----------------------------------------------------------------------------------------

def test_fingerprints_are_taken_in_the_agents_form_and_openssls(tmp_path):
    made = self_signed(tmp_path, "127.0.0.1")
    openssl = subprocess.run(["openssl", "x509", "-in", str(made.cert), "-noout", "-fingerprint", "-sha256"],
                             capture_output=True, text=True, check=True, timeout=30).stdout.strip()
    # openssl prints 'sha256 Fingerprint=AB:CD:...' (its case varies by version)
    assert parse_fingerprint(openssl) == cert_fingerprint(made.cert) == made.fingerprint
    bare = made.fingerprint.removeprefix("sha256:")
    assert parse_fingerprint("SHA256:" + bare.upper()) == made.fingerprint
    for bad in (bare, "sha1:" + bare[:40], "sha256:" + bare[:-2], "sha256:" + bare + "00", "sha256:" + bare + "\n0",
                "md5:" + bare, "sha256:" + "g" * 64):
        with pytest.raises(InputError, match="is not sha256:<64 hex digits>"):
            parse_fingerprint(bad)


def test_a_controller_trusts_agents_one_way_only(tmp_path):
    assert Trust.choose().mode == SYSTEM
    assert Trust.choose(plain=True).mode == PLAIN
    ca = Authority(tmp_path)
    assert Trust.choose(ca_file=ca.ca).mode == CA
    pinned = Trust.choose(fingerprints=["sha256:" + "AB" * 32, "sha256:" + "ab" * 32])
    assert pinned.mode == FINGERPRINT and pinned.fingerprints == ("sha256:" + "ab" * 32,)
    with pytest.raises(InputError, match="--agent-ca and --agent-insecure-plain-http do not go together"):
        Trust.choose(ca_file=ca.ca, plain=True)
    with pytest.raises(InputError, match="agent_ca and agent_fingerprints do not go together"):
        Trust.choose(ca_file=ca.ca, fingerprints=["sha256:" + "ab" * 32], names=RECIPE_NAMES)
    with pytest.raises(InputError, match="does not exist"):
        Trust.choose(ca_file=tmp_path / "absent.pem")
    (tmp_path / "junk.pem").write_text("not a certificate\n")
    with pytest.raises(InputError, match="holds no usable PEM certificate"):
        Trust.choose(ca_file=tmp_path / "junk.pem")


def test_the_agent_takes_a_certificate_and_its_private_key_only(tmp_path):
    made = self_signed(tmp_path, "127.0.0.1")
    context, fingerprint = server_context(made.cert, made.key)
    assert fingerprint == made.fingerprint and context.minimum_version.name == "TLSv1_2"
    os.chmod(made.key, 0o640)   # group-readable: Debian's ssl-cert group does this
    server_context(made.cert, made.key)
    os.chmod(made.key, 0o644)
    with pytest.raises(RefusedError, match="every user may read it"):
        server_context(made.cert, made.key)
    os.chmod(made.key, 0o600)
    other = self_signed(tmp_path, "127.0.0.1", "other")
    with pytest.raises(InputError, match="cannot be used"):
        server_context(made.cert, other.key)   # a key that is not the certificate's
    with pytest.raises(InputError, match="holds no PEM certificate"):
        server_context(made.key, made.key)
    encrypted = tmp_path / "encrypted.key"
    subprocess.run(["openssl", "pkey", "-in", str(made.key), "-aes256", "-passout", "pass:secret", "-out",
                    str(encrypted)], check=True, capture_output=True, timeout=30)
    os.chmod(encrypted, 0o600)
    with pytest.raises(InputError, match="encrypted"):
        server_context(made.cert, encrypted)
