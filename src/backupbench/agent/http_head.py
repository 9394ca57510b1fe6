"""The agent's HTTP, read from bytes already received (pure): where the request head ends,
what it asks, the checks made before a byte of the body is read, and the answer's bytes.

Order of checks, each answered with one line of JSON and the connection closed: path (404) and
method (405), then the token (401) before a byte of the body is read, then the body's size (411
without a length, 413 over MAX_BODY_BYTES, no chunked bodies). The request itself (400) is
checked once the body is in (protocol.parse_request). The token is compared with
hmac.compare_digest, so the time taken does not tell how much of a guess was right.

The Authorization field is read from the head's raw bytes, not from http.client's parse, and
must be exactly `Bearer`, one space and the token, byte for byte: the email parser behind
http.client drops some whitespace and keeps other, and `str.strip()` drops far more (a vertical
tab, \\x1c-\\x1f, NEL, a no-break space), so either would let more than one spelling of the token
in, where the protocol matches every field whole.
"""

from __future__ import annotations

import hmac
import http.client
import io
import json
import re
from email.utils import formatdate
from http import HTTPStatus
from typing import Any

from backupbench.agent.protocol import API_PATH, MAX_BODY_BYTES, error_body

# A real request head is a few hundred bytes; a longer one is refused before more is read.
MAX_HEAD_BYTES = 16 * 1024
_REQUEST_LINE = re.compile(r"([A-Z]{1,16}) (\S{1,2048}) HTTP/1\.[01]")
_DIGITS = re.compile(r"[0-9]+")
END_OF_HEAD = b"\r\n\r\n"


class Refusal(Exception):
    """A request answered with an error status and one line, before or instead of its work."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def head_end(received: bytes | bytearray) -> int:
    """Where the head ends (the body's first byte), or -1 while it has not ended yet; Refusal(431)
    once more than MAX_HEAD_BYTES came without an end."""
    end = received.find(END_OF_HEAD, 0, MAX_HEAD_BYTES + len(END_OF_HEAD))
    if end < 0:
        if len(received) > MAX_HEAD_BYTES:
            raise Refusal(431, f"request head is over {MAX_HEAD_BYTES:,} bytes")
        return -1
    return end + len(END_OF_HEAD)


def _headers(head: bytes) -> tuple[str, str, http.client.HTTPMessage, bytes]:
    line, _, rest = head.partition(b"\r\n")
    found = _REQUEST_LINE.fullmatch(line.decode("latin-1"))
    if found is None:
        raise Refusal(400, "not an HTTP/1.x request line")
    try:
        headers = http.client.parse_headers(io.BytesIO(rest))
    except http.client.HTTPException:
        raise Refusal(431, "too many or too long header lines") from None
    return found.group(1), found.group(2), headers, rest


def _one(headers: http.client.HTTPMessage, name: str) -> str | None:
    values = headers.get_all(name) or []
    if len(values) > 1:
        raise Refusal(400, f"{name} is given {len(values)} times")
    return values[0] if values else None


def raw_fields(fields: bytes, name: bytes) -> list[bytes]:
    """The bytes after the colon of every line of `fields` (the head after its request line)
    whose field name is `name`, ASCII case aside. Lines end only at CRLF: a bare CR or LF is
    left inside the value, so a field split there matches nothing."""
    found = []
    for line in fields.split(b"\r\n"):
        field, colon, value = line.partition(b":")
        if colon and field.lower() == name:
            found.append(value)
    return found


def authenticated(field: bytes | None, token: bytes) -> bool:
    """Whether the raw Authorization field (the bytes after its colon) is `Bearer TOKEN`."""
    given = field or b""
    # Every client writes one space after the colon (`Authorization: Bearer ...`); that space
    # separates name and value, the rest is the value, matched whole.
    if given.startswith(b" "):
        given = given[1:]
    # One comparison of the whole value, scheme included: a wrong scheme takes as long as a
    # wrong token, and no whitespace around either is taken for the token.
    return hmac.compare_digest(given, b"Bearer " + token)


def body_length(text: str | None) -> int:
    """The body length a Content-Length field says: Refusal 411 without one, 400 for anything
    but ASCII digits, 413 for a number over MAX_BODY_BYTES, however many digits it has."""
    if text is None:
        raise Refusal(411, "Content-Length is required")
    digits = text.strip(" \t")
    if not _DIGITS.fullmatch(digits):
        raise Refusal(400, "Content-Length is not a number")
    # Told by its length first: int() refuses over 4300 digits, and a head may hold 16 KiB.
    digits = digits.lstrip("0") or "0"
    if len(digits) > len(str(MAX_BODY_BYTES)) or int(digits) > MAX_BODY_BYTES:
        raise Refusal(413, f"request body is over {MAX_BODY_BYTES:,} bytes")
    return int(digits)


def screen(head: bytes, token: bytes) -> int:
    """The body length of an authenticated POST /v1 whose head is `head` (up to and with the
    blank line); Refusal for anything else."""
    method, path, headers, fields = _headers(head)
    if path != API_PATH:
        raise Refusal(404, f"no such path: only POST {API_PATH}")
    if method != "POST":
        raise Refusal(405, f"method {method} not allowed: only POST {API_PATH}")
    given = raw_fields(fields, b"authorization")
    if len(given) > 1:
        raise Refusal(400, f"Authorization is given {len(given)} times")
    if not authenticated(given[0] if given else None, token):
        raise Refusal(401, "wrong or missing token (Authorization: Bearer TOKEN)")
    if headers.get("Transfer-Encoding") is not None:
        raise Refusal(400, "chunked bodies are not accepted: send Content-Length")
    return body_length(_one(headers, "Content-Length"))


def answer_bytes(status: int, body: dict[str, Any]) -> bytes:
    """A whole answer: one JSON object, and the connection closed after it (one request per
    connection: no idle connection holds anything)."""
    data = json.dumps(body).encode()
    head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nServer: backupbench-agent\r\n"
            f"Date: {formatdate(usegmt=True)}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n")
    return head.encode("ascii") + data


def refusal_bytes(refusal: Refusal) -> bytes:
    return answer_bytes(refusal.status, error_body(refusal.message))
