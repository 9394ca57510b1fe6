"""Servers that are not S3, made by the tests on 127.0.0.1: a black hole (connections accepted,
never answered) and a web server answering an HTML page to everything, over TLS with a
self-signed certificate (made with openssl) or plain HTTP. Used by the endpoint-check tests."""

from __future__ import annotations

import http.server
import shutil
import socket
import ssl
import subprocess
import threading
from contextlib import contextmanager
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
