"""The agent's server: one address, one path, one method, a shared token, bounded everything.

Two parts. The reception (reception.py) is one thread that accepts every connection and reads
it, without blocking, until its request is whole: the TLS handshake, the head, which is refused
at once unless it carries the token (http_head.screen: 404, 405, 401, 411, 413), then the body.
Each complete request with the token goes on a queue of at most MAX_QUEUED (more are answered
503), from which WORKERS threads take it, answer it (400 for a request protocol.py refuses)
and send the answer, each send bounded by SEND_TIMEOUT_S. So peers without the token never
hold a thread or a queue place, and many idle or slow connections cannot keep a request with
the token from being answered. No request runs anything slow in a worker: runs go to the job
slot. Nothing of a request body is ever logged (it may hold S3 credentials).
"""

from __future__ import annotations

import logging
import os
import platform
import queue
import resource
import socket
import ssl
import threading
from pathlib import Path
from typing import Any

from backupbench import __version__
from backupbench.agent import runs
from backupbench.agent.feed import SampleFeed
from backupbench.agent.http_head import Refusal, answer_bytes
from backupbench.agent.jobs import Busy, JobSlot, UnknownJob
from backupbench.agent.reception import LISTEN_BACKLOG, MAX_PENDING, Reception
from backupbench.errors import RefusedError
from backupbench.agent.protocol import (PROTOCOL_VERSION, Hello, Monitor, ProtocolError, S3Run, SmallFilesRun,
                                        Status, Stop, error_body, parse_request)

log = logging.getLogger("backupbench.agent")

WORKERS = 4
MAX_QUEUED = 256
SEND_TIMEOUT_S = 10.0
# How long a stopping agent waits for a job to stop its engine and clean up.
STOP_TIMEOUT_S = 120.0


def _raise_open_file_limit() -> None:
    """Room for every connection the reception holds and the queue keeps: the usual soft limit
    (1024) is less than those plus the agent's own files."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = MAX_PENDING + MAX_QUEUED + WORKERS + 256
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted if hard == resource.RLIM_INFINITY
                                                        else min(wanted, hard), hard))
        except (ValueError, OSError):
            pass   # the oldest connection then makes room a little sooner (reception._accept)


class AgentServer:
    def __init__(self, address: tuple[str, int], token: bytes, root: Path, tls: ssl.SSLContext | None,
                 feed: SampleFeed | None = None):
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.token, self.root, self.tls = token, root, tls
        self.jobs = JobSlot()
        self.feed = feed or SampleFeed(root=root)
        _raise_open_file_limit()
        self._listener = socket.create_server(address, family=family, backlog=LISTEN_BACKLOG)
        self._queue: queue.Queue[tuple[socket.socket, str, bytes]] = queue.Queue(MAX_QUEUED)
        self.reception = Reception(self._listener, tls, token, self._deliver, self._queue.full)
        for number in range(WORKERS):
            threading.Thread(target=self._work, name=f"agent-worker-{number}", daemon=True).start()
        self.feed.start()

    @property
    def listening(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def serve_forever(self) -> None:
        """Until stop() (or KeyboardInterrupt in the calling thread)."""
        self.reception.run()

    def stop(self) -> None:
        self.reception.stop()

    def close(self) -> bool:
        """Stop the running job (its engine cleans up), the monitor and the socket; True if
        the job stopped in time."""
        stopped = self.jobs.stop_all(STOP_TIMEOUT_S)
        self.feed.stop()
        self._listener.close()
        return stopped

    # ---- the workers -------------------------------------------------------------------------
    def _deliver(self, sock: socket.socket, peer: str, body: bytes) -> bool:
        try:
            self._queue.put_nowait((sock, peer, body))
        except queue.Full:
            return False
        return True

    def _work(self) -> None:
        while True:
            sock, peer, body = self._queue.get()
            try:
                status, answer = self.respond(body)
                sock.setblocking(True)
                sock.settimeout(SEND_TIMEOUT_S)
                sock.sendall(answer_bytes(status, answer))
                log.info("%s POST /v1 %d", peer, status)
            except OSError as exc:
                log.info("%s: answer not sent: %s", peer, exc)
            finally:
                sock.close()

    def respond(self, body: bytes) -> tuple[int, dict[str, Any]]:
        """The status and answer for a request body that came with the token."""
        try:
            return self.answer(parse_request(body))
        except Refusal as exc:
            return exc.status, error_body(exc.message)
        except ProtocolError as exc:
            return 400, error_body(exc.message)
        except Busy as exc:
            return 409, error_body(exc.one_line())
        except RefusedError as exc:
            return 400, error_body(exc.one_line())
        except UnknownJob as exc:
            return 404, error_body(exc.message)
        except Exception as exc:  # noqa: BLE001 - one line to the caller, not a traceback on the agent's stderr
            log.warning("request failed: %r", exc)
            return 500, error_body(f"internal error: {type(exc).__name__}")

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
