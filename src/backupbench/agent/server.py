"""The agent's HTTP server: one path, one method, a shared token, bounded everything.

Order of checks for every request, each answered with one line of JSON and the connection
closed: path (404) and method (405) first, then the token (401) before a byte of the body
is read, then the body's size (411 without a length, 413 over MAX_BODY_BYTES, no chunked
bodies), then the request itself (400). The token is compared with hmac.compare_digest,
so the time taken does not tell how much of a guess was right.

Bounds: each socket read or write waits at most REQUEST_TIMEOUT_S, a whole request at most
REQUEST_DEADLINE_S; at most MAX_CONNECTIONS
requests are served at once (more are closed unanswered), so slow or many clients cannot
pile up threads. No request runs anything slow in its own thread: runs go to the job slot.
Nothing of a request body is ever logged (it may hold S3 credentials).
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import platform
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from backupbench import __version__
from backupbench.agent import runs
from backupbench.agent.feed import SampleFeed
from backupbench.agent.jobs import Busy, JobSlot, UnknownJob
from backupbench.errors import RefusedError
from backupbench.agent.protocol import (API_PATH, MAX_BODY_BYTES, PROTOCOL_VERSION, Hello, Monitor, ProtocolError,
                                        S3Run, SmallFilesRun, Status, Stop, error_body, parse_request)

log = logging.getLogger("backupbench.agent")

REQUEST_TIMEOUT_S = 10.0
REQUEST_DEADLINE_S = 30.0
MAX_CONNECTIONS = 16
# How long a stopping agent waits for a job to stop its engine and clean up.
STOP_TIMEOUT_S = 120.0


class Refusal(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


class AgentServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], token: bytes, root: Path, feed: SampleFeed | None = None):
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.token = token
        self.root = root
        self.jobs = JobSlot()
        self.feed = feed or SampleFeed()
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(address, AgentHandler)
        self.feed.start()

    @property
    def listening(self) -> str:
        host, port = self.server_address[:2]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def close(self) -> bool:
        """Stop the running job (its engine cleans up), the monitor and the socket; True if
        the job stopped in time."""
        stopped = self.jobs.stop_all(STOP_TIMEOUT_S)
        self.feed.stop()
        self.server_close()
        return stopped

    # ---- the requests ----------------------------------------------------------------------
    def answer(self, request: Any) -> tuple[int, dict[str, Any]]:
        if isinstance(request, Hello):
            return 200, self._hello()
        if isinstance(request, Monitor):
            return 200, self.feed.since(request.since)
        if isinstance(request, SmallFilesRun):
            runs.check_inside(self.root, request.subfolder)   # refused now, not in the job: 400
            job = self.jobs.start(request.kind, lambda control: runs.run_smallfiles(request, self.root, control))
            return 202, job.as_dict()
        if isinstance(request, S3Run):
            job = self.jobs.start(request.kind, lambda control: runs.run_s3(request, control))
            return 202, job.as_dict()
        if isinstance(request, Status):
            return 200, self.jobs.get(request.job_id).as_dict()
        if isinstance(request, Stop):
            return 200, self.jobs.stop(request.job_id).as_dict()
        raise Refusal(400, "unknown request")  # pragma: no cover - parse_request admits only the above

    def _hello(self) -> dict[str, Any]:
        uname = os.uname()
        return {"agent": "backupbench", "version": __version__, "protocol": PROTOCOL_VERSION,
                "host": {"hostname": socket.gethostname(), "kernel": uname.release, "machine": uname.machine,
                         "cpus": os.cpu_count(), "python": platform.python_version()},
                "root": str(self.root), "devices": self.feed.devices}


class AgentHandler(BaseHTTPRequestHandler):
    server: AgentServer
    timeout = REQUEST_TIMEOUT_S
    protocol_version = "HTTP/1.1"
    server_version = "backupbench-agent"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        # The socket timeout bounds each read; this bounds the whole request, so a client
        # sending a byte every few seconds cannot hold a connection slot for ever.
        self._deadline = threading.Timer(REQUEST_DEADLINE_S, self._expire)
        self._deadline.daemon = True
        self._deadline.start()

    def _expire(self) -> None:
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def finish(self) -> None:
        self._deadline.cancel()
        super().finish()

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self._body_read = False
        try:
            if self.path != API_PATH:
                raise Refusal(404, f"no such path: only POST {API_PATH}")
            self._authenticate()
            request = parse_request(self._body())
            status, body = self.server.answer(request)
        except Refusal as exc:
            status, body = exc.status, error_body(exc.message)
        except ProtocolError as exc:
            status, body = 400, error_body(exc.message)
        except Busy as exc:
            status, body = 409, error_body(exc.one_line())
        except RefusedError as exc:
            status, body = 400, error_body(exc.one_line())
        except UnknownJob as exc:
            status, body = 404, error_body(exc.message)
        except Exception as exc:  # noqa: BLE001 - one line to the caller, not a traceback on the agent's stderr
            log.warning("request failed: %r", exc)
            status, body = 500, error_body(f"internal error: {type(exc).__name__}")
        self._drain()
        self._send(status, body)

    def _drain(self) -> None:
        """Read (and drop) a body the request was refused before reading: closing a socket
        with unread data resets the connection, and the client would lose the answer."""
        length_text = self.headers.get("Content-Length", "")
        if not self._body_read and length_text.isdigit() and int(length_text) <= MAX_BODY_BYTES:
            try:
                self.rfile.read(int(length_text))
            except OSError:
                pass

    def _refuse_method(self) -> None:
        self._body_read = False
        self._drain()
        self._send(405, error_body(f"method {self.command} not allowed: only POST {API_PATH}"))

    do_GET = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = _refuse_method  # noqa: N815

    def _authenticate(self) -> None:
        given = self.headers.get("Authorization", "")
        scheme, _, token = given.partition(" ")
        # Compared whatever the scheme said, so a wrong scheme takes as long as a wrong token.
        ok = hmac.compare_digest(token.strip().encode("utf-8", "replace"), self.server.token)
        if not ok or scheme != "Bearer":
            raise Refusal(401, "wrong or missing token (Authorization: Bearer TOKEN)")

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding"):
            raise Refusal(400, "chunked bodies are not accepted: send Content-Length")
        length_text = self.headers.get("Content-Length")
        if length_text is None:
            raise Refusal(411, "Content-Length is required")
        if not length_text.isdigit():
            raise Refusal(400, "Content-Length is not a number")
        length = int(length_text)
        if length > MAX_BODY_BYTES:
            raise Refusal(413, f"request body is over {MAX_BODY_BYTES:,} bytes")
        body = self.rfile.read(length)
        self._body_read = True
        if len(body) != length:
            raise Refusal(400, "request body ended early")
        return body

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        # One request per connection: no idle connections holding a slot.
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
        # The request line only (method, path, status): never headers or bodies.
        log.info("%s %s", self.address_string(), format % args)
