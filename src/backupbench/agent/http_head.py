"""The agent's HTTP, read from bytes already received (pure): where the request head ends,
what it asks, the checks made before a byte of the body is read, and the answer's bytes.

Two readers in turn, and a request must pass both. First the checks whose order the agent
promises, each on the head's raw bytes and each only able to refuse: path (404) and method
(405), then the token (401) before a byte of the body is read, then a Content-Length over
MAX_BODY_BYTES (413, however many digits). Then h11 reads the whole head as HTTP/1.1 (400 for
what it refuses, 431 for too many fields), and its reading decides: a transfer coding (chunked)
is refused (400), a request without Content-Length is 411, a body over MAX_BODY_BYTES is 413,
and the body is the Content-Length h11 read. The request itself (400) is checked once the body
is in (protocol.parse_request). Each refusal is one line of JSON and the connection closed.

Why the first checks read raw bytes and come first: h11 strips spaces and tabs around a value, so
`Bearer TOKEN ` with a trailing space would be the token to it; and it refuses a head with a
control character in a field (400) before anyone could say that the token was wrong (401). So
the Authorization field must be exactly `Bearer`, one space and the token, byte for byte, in the
raw head (the email parser behind http.client, and `str.strip()`, would each let other spellings
in too), and h11's reading of it must say the same (a folded line would add to it). The token is
compared with hmac.compare_digest, so the time taken does not tell how much of a guess was right.
"""

from __future__ import annotations

import hmac
import json
import re
from email.utils import formatdate
from http import HTTPStatus
from typing import Any

import h11

from backupbench.agent.protocol import API_PATH, MAX_BODY_BYTES, error_body

# A real request head is a few hundred bytes; a longer one is refused before more is read.
MAX_HEAD_BYTES = 16 * 1024
# http.client's bound on a head's fields; h11 bounds only the head's bytes.
MAX_FIELDS = 100
_REQUEST_LINE = re.compile(r"([A-Z]{1,16}) (\S{1,2048}) HTTP/1\.[01]")
_DIGITS = re.compile(rb"[0-9]+")
END_OF_HEAD = b"\r\n\r\n"
NO_TRANSFER_CODING = "chunked bodies are not accepted: send Content-Length"
WRONG_TOKEN = "wrong or missing token (Authorization: Bearer TOKEN)"
TOO_LARGE = f"request body is over {MAX_BODY_BYTES:,} bytes"


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


def _request_line(head: bytes) -> tuple[str, str]:
    """Method and path, read only to refuse in the promised order; h11 reads the line again."""
    line = head.partition(b"\r\n")[0]
    found = _REQUEST_LINE.fullmatch(line.decode("latin-1"))
    if found is None:
        raise Refusal(400, "not an HTTP/1.x request line")
    return found.group(1), found.group(2)


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


def too_large(fields: bytes) -> bool:
    """Whether a raw Content-Length field of `fields` is a number over MAX_BODY_BYTES. Read here,
    before h11, because h11 refuses more than 20 digits as not a number (400), where a number too
    large for a body is 413 however many digits it has."""
    for value in raw_fields(fields, b"content-length"):
        digits = value.strip(b" \t")
        if _DIGITS.fullmatch(digits):
            # Told by its length first: int() refuses over 4300 digits, and a head may hold 16 KiB.
            digits = digits.lstrip(b"0") or b"0"
            if len(digits) > len(str(MAX_BODY_BYTES)) or int(digits) > MAX_BODY_BYTES:
                return True
    return False


def read_head(head: bytes) -> h11.Request:
    """The head as h11 reads it: Refusal 400 for what it refuses, 431 for too many fields."""
    # h11 also ends a line at a bare LF, where the checks before it do not: refused, so that both
    # read the same lines, and see the head end (and the body start) at the same byte.
    if head.count(b"\n") != head.count(b"\r\n"):
        raise Refusal(400, "a line of the request head ends without CR")
    reader = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES + len(END_OF_HEAD))
    reader.receive_data(head)
    try:
        event = reader.next_event()
    except h11.RemoteProtocolError as exc:
        if exc.error_status_hint == 501:   # a transfer coding h11 does not know; none is taken here
            raise Refusal(400, NO_TRANSFER_CODING) from None
        # h11's words may quote a field's value: bounded, so an answer stays one short line.
        raise Refusal(431 if exc.error_status_hint == 431 else 400,
                      f"not an HTTP/1.1 request head: {str(exc)[:200]}") from None
    if not isinstance(event, h11.Request) or reader.trailing_data[0]:
        raise Refusal(400, "the request head does not end at its blank line")
    if len(event.headers) > MAX_FIELDS:
        raise Refusal(431, f"more than {MAX_FIELDS} header fields")
    return event


def body_length(request: h11.Request) -> int:
    """The body's length as h11 framed it: Refusal 400 for a transfer coding, 411 without
    Content-Length (h11 would take that as an empty body), 413 over MAX_BODY_BYTES."""
    if any(name == b"transfer-encoding" for name, _ in request.headers):
        raise Refusal(400, NO_TRANSFER_CODING)
    lengths = [value for name, value in request.headers if name == b"content-length"]
    if not lengths:
        raise Refusal(411, "Content-Length is required")
    # h11 keeps one Content-Length, of at most 20 ASCII digits (two that differ are its 400).
    if int(lengths[0]) > MAX_BODY_BYTES:
        raise Refusal(413, TOO_LARGE)
    return int(lengths[0])


def screen(head: bytes, token: bytes) -> int:
    """The body length of an authenticated POST /v1 whose head is `head` (up to and with the
    blank line); Refusal for anything else."""
    method, path = _request_line(head)
    if path != API_PATH:
        raise Refusal(404, f"no such path: only POST {API_PATH}")
    if method != "POST":
        raise Refusal(405, f"method {method} not allowed: only POST {API_PATH}")
    fields = head.partition(b"\r\n")[2]
    given = raw_fields(fields, b"authorization")
    if len(given) > 1:
        raise Refusal(400, f"Authorization is given {len(given)} times")
    if not authenticated(given[0] if given else None, token):
        raise Refusal(401, WRONG_TOKEN)
    if too_large(fields):
        raise Refusal(413, TOO_LARGE)
    request = read_head(head)
    seen = [value for name, value in request.headers if name == b"authorization"]
    if len(seen) != 1 or not hmac.compare_digest(seen[0], b"Bearer " + token):
        raise Refusal(401, WRONG_TOKEN)
    return body_length(request)


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
