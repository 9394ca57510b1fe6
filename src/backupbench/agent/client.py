"""The controller's side: call an agent, with a timeout, and get typed errors back.

    agent = AgentClient("10.0.0.5:7480", token, trust=Trust.choose(fingerprints=["sha256:..."]))
    agent.hello()
    job = agent.s3_run(endpoint=..., bucket=..., prefix="backupbench/<run-id>/", objects=1000, ...)
    result = agent.wait(job["job_id"], timeout=600)

Errors: AgentUnreachable (no connection, no answer in time, no TLS where TLS was expected),
AgentTrustError (a certificate not trusted: nothing was sent), AgentAuthError (401: wrong
token), AgentRefused (any other 4xx: the one line the agent said), AgentJobFailed (a job
that ended failed or stopped).

Every call is over TLS unless the trust says plain HTTP (agent/tls.py), and the agent's
certificate is checked before the request, which carries the token, is sent.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import ssl
import time
from typing import Any

from backupbench import __version__
from backupbench.agent.protocol import API_PATH
from backupbench.agent.startup import parse_listen
from backupbench.agent.tls import PLAIN, AgentTrustError, Trust
from backupbench.errors import EngineError, InputError, RefusedError

DEFAULT_TIMEOUT_S = 10.0
POLL_S = 0.5
# A host name as `run --hosts` takes one (engines/fio_client.py): the agent's own --listen takes
# only an IP address, but a controller may reach that address by name.
_HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]{0,252}")


def split_address(text: str) -> tuple[str, int]:
    """ADDR:PORT, [IPV6]:PORT or NAME:PORT -> (host, port); InputError as parse_listen's."""
    try:
        return parse_listen(text)
    except InputError:
        host, _, port = text.rpartition(":")
        if _HOST_NAME.fullmatch(host) and any(c.isalpha() for c in host) and re.fullmatch(r"[0-9]{1,5}", port) \
                and int(port) < 65536:
            return host, int(port)
        raise


class AgentUnreachable(EngineError):
    """The agent could not be reached or did not answer in time."""


class AgentAuthError(InputError):
    """The agent refused the token."""


class AgentRefused(RefusedError):
    """The agent refused the request (unknown kind, bad value, path outside its root, busy)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class AgentJobFailed(EngineError):
    """A job ended failed or stopped; `.job` is its last status."""

    def __init__(self, message: str, job: dict[str, Any]):
        super().__init__(message)
        self.job = job


class AgentClient:
    def __init__(self, address: str, token: str | bytes, timeout: float = DEFAULT_TIMEOUT_S,
                 trust: Trust | None = None):
        self.host, self.port = split_address(address)
        self.address = address
        self._token = token.decode() if isinstance(token, bytes) else token
        self.timeout = timeout
        self.trust = trust or Trust()

    def with_timeout(self, timeout: float) -> "AgentClient":
        """The same agent, token and trust, each call bounded by `timeout` seconds instead."""
        return AgentClient(self.address, self._token, timeout, self.trust)

    def __repr__(self) -> str:
        return f"AgentClient({self.address!r})"   # never the token

    def _connect(self) -> http.client.HTTPConnection:
        """A connection whose peer is trusted: nothing is sent before this returns."""
        conn = self.trust.connection(self.host, self.port, self.timeout)
        try:
            conn.connect()
        except ssl.SSLCertVerificationError as exc:
            conn.close()
            raise AgentTrustError(f"agent {self.address}: certificate not trusted ({exc.verify_message}); nothing "
                                  "was sent to it", self.trust.untrusted_fix()) from None
        except (ssl.SSLError, ConnectionResetError) as exc:
            conn.close()
            if self.trust.mode == PLAIN:
                raise
            reason = getattr(exc, "reason", None) or exc.strerror or type(exc).__name__
            raise AgentUnreachable(f"agent {self.address}: no TLS handshake ({reason})",
                                   "is the agent started with --insecure-plain-http? Better give it --tls-cert and "
                                   f"--tls-key; else say {self.trust.names[2]} here too") from None
        except BaseException:
            conn.close()
            raise
        try:
            self.trust.check_peer(conn, self.address)
        except BaseException:
            conn.close()
            raise
        return conn

    def call(self, kind: str, **fields: Any) -> tuple[int, dict[str, Any]]:
        """One request; the status and the decoded answer. Only transport and trust errors raise here."""
        body = json.dumps({"kind": kind, **fields}).encode()
        try:
            conn = self._connect()
        except (OSError, http.client.HTTPException) as exc:
            raise self._unreachable(exc) from None
        try:
            conn.request("POST", API_PATH, body=body, headers={
                "Authorization": f"Bearer {self._token}", "Content-Type": "application/json"})
            response = conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise self._unreachable(exc) from None
        finally:
            conn.close()
        try:
            answer = json.loads(data) if data else {}
        except ValueError:
            raise AgentUnreachable(f"agent {self.address} did not answer with JSON (status {response.status})",
                                   "is it a backupbench agent?") from None
        return response.status, answer if isinstance(answer, dict) else {}

    def _unreachable(self, exc: BaseException) -> AgentUnreachable:
        reason = "no answer in time" if isinstance(exc, (socket.timeout, TimeoutError)) else str(exc) or type(exc).__name__
        return AgentUnreachable(f"agent {self.address}: {reason}",
                                "check that `backupbench agent` runs there and --listen matches")

    def request(self, kind: str, **fields: Any) -> dict[str, Any]:
        status, answer = self.call(kind, **fields)
        if status == 401:
            raise AgentAuthError(f"agent {self.address} refused the token", "use the agent's --token-file content")
        if status >= 400:
            raise AgentRefused(f"agent {self.address} refused {kind}: {answer.get('error', status)}", status)
        return answer

    # ---- the requests -----------------------------------------------------------------------
    def hello(self) -> dict[str, Any]:
        return self.request("hello", version=__version__)

    def monitor(self, since: int = 0) -> dict[str, Any]:
        return self.request("monitor", since=since)

    def smallfiles_run(self, **fields: Any) -> dict[str, Any]:
        return self.request("smallfiles-run", **fields)

    def s3_run(self, **fields: Any) -> dict[str, Any]:
        return self.request("s3-run", **fields)

    def status(self, job_id: str) -> dict[str, Any]:
        return self.request("status", job_id=job_id)

    def stop(self, job_id: str) -> dict[str, Any]:
        return self.request("stop", job_id=job_id)

    def wait(self, job_id: str, timeout: float, poll: float = POLL_S) -> dict[str, Any]:
        """Poll until the job ends; its result, or AgentJobFailed. On timeout the job is asked
        to stop and AgentUnreachable is raised."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.status(job_id)
            if job["state"] == "done":
                return job
            if job["state"] in ("failed", "stopped"):
                raise AgentJobFailed(f"agent {self.address}: job {job_id} {job['state']}: {job['error']}", job)
            if time.monotonic() >= deadline:
                self.stop(job_id)
                raise AgentUnreachable(f"agent {self.address}: job {job_id} did not end within {timeout:g} s "
                                       "(asked to stop)")
            time.sleep(poll)
