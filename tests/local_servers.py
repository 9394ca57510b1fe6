"""Servers made by the tests on 127.0.0.1: a black hole (connections accepted, never answered)
and a web server answering an HTML page to everything, over TLS with a self-signed certificate
(made with openssl) or plain HTTP, used by the endpoint-check tests; and a throttling S3 (a
bucket in memory that answers 503 SlowDown to the first PUTs of objects), used by the retry
tests."""

from __future__ import annotations

import http.server
import re
import shutil
import socket
import ssl
import subprocess
import threading
import urllib.parse
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest


@contextmanager
def black_hole() -> Iterator[int]:
    """A port whose connections the kernel completes and nobody ever reads or answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield listener.getsockname()[1]


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """(certificate, key) for 127.0.0.1, valid a day."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed (needed to make a test certificate)")
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


@contextmanager
def web_server(status: int, tls_folder: Path | None) -> Iterator[int]:
    """An HTTP server (HTTPS with a certificate made in `tls_folder`) answering every request
    with an HTML page and `status`; its port."""
    class Page(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            body = b"<!DOCTYPE html><html><body><h1>Welcome</h1></body></html>"
            self.send_response(status)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            if 300 <= status < 400:
                self.send_header("Location", "https://127.0.0.1/")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    if tls_folder is not None:
        cert, key = self_signed_certificate(tls_folder)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
             b"<Message>Please reduce your request rate.</Message></Error>")


@dataclass
class Throttle:
    """What the throttling S3 did: PUTs of objects answered SlowDown, and every request seen."""

    slow_downs: int                  # answer 503 SlowDown to this many PUTs of objects first
    answered_503: int = 0
    requests: list[tuple[str, str]] = field(default_factory=list)   # (method, path?query)
    objects: dict[str, bytes] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _listing(state: Throttle, prefix: str) -> bytes:
    keys = sorted(k for k in state.objects if k.startswith(prefix))
    items = "".join(f"<Contents><Key>{k}</Key><Size>{len(state.objects[k])}</Size></Contents>" for k in keys)
    return (f"<ListBucketResult><KeyCount>{len(keys)}</KeyCount><IsTruncated>false</IsTruncated>{items}"
            "</ListBucketResult>").encode()


class _ThrottlingS3(http.server.BaseHTTPRequestHandler):
    """One bucket, path style, no signature checked: list, PUT, GET, DELETE, multi-object
    DELETE and an empty list of multipart uploads; the first PUTs of objects answered SlowDown."""

    state: Throttle
    protocol_version = "HTTP/1.1"

    def _answer(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _handle(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        _, _, key = url.path.lstrip("/").partition("/")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        state = self.state
        with state.lock:
            state.requests.append((self.command, self.path))
            if self.command == "PUT" and key and state.answered_503 < state.slow_downs:
                state.answered_503 += 1
                return self._answer(503, SLOW_DOWN, {"Content-Type": "application/xml"})
            if self.command == "GET" and not key:
                if "uploads" in query:
                    return self._answer(200, b"<ListMultipartUploadsResult></ListMultipartUploadsResult>")
                return self._answer(200, _listing(state, query.get("prefix", [""])[0]))
            if self.command == "POST" and "delete" in query:
                for deleted in re.findall(rb"<Key>([^<]*)</Key>", body):
                    state.objects.pop(deleted.decode(), None)
                return self._answer(200, b"<DeleteResult></DeleteResult>")
            if self.command == "PUT" and key:
                state.objects[key] = body
                return self._answer(200, headers={"ETag": '"e"'})
            if self.command == "GET" and key in state.objects:
                return self._answer(200, state.objects[key])
            if self.command == "DELETE" and key:
                state.objects.pop(key, None)
                return self._answer(204)
        self._answer(404, b"<Error><Code>NoSuchKey</Code><Message>none</Message></Error>")

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def throttling_s3(slow_downs: int) -> Iterator[tuple[str, Throttle]]:
    """An S3 endpoint on 127.0.0.1 answering 503 SlowDown to its first `slow_downs` PUTs of
    objects; (endpoint, what it did). Stopped on the way out, a failure included."""
    state = Throttle(slow_downs)
    handler = type("Handler", (_ThrottlingS3,), {"state": state})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
