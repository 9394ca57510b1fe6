"""MinIO as a layout: an S3 server over one drive folder, or erasure-coded over N (field note D).

    with MinioServer([Path("/mnt/d1")]) as server:            # one drive: plain single-drive server
        ...server.endpoint, server.access_key, server.secret_key
    with MinioServer([Path(f"/mnt/d{i}") for i in range(1, 5)]) as server:   # erasure coding
        ...

The server listens on 127.0.0.1 only, on a free port, with random root credentials passed
in its environment (never its argv), and is ready when /minio/health/cluster answers 200
(the erasure set has write quorum) - waited for with a bound. It is stopped on exit from
the `with` block, by an atexit hook if the interpreter ends first, and by the kernel if
backupbench dies outright (process.Background's setpriv --pdeathsig, when util-linux's setpriv is there;
the signal follows the thread that started the server, so start it from a thread that lives
as long as the server).

Drives are folders the caller owns (a layout's mount points, a test's tmp dirs). MinIO
refuses drives on the root disk unless MINIO_CI_CD=1; it is set when a drive is on the same
filesystem as /. A drive that holds files but no MinIO format (.minio.sys) is refused:
MinIO would take it over.
"""

from __future__ import annotations

import atexit
import os
import secrets
import socket
import ssl
import string
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from backupbench import process
from backupbench.errors import EngineError, InputError, RefusedError
from backupbench.paths import Syntax, for_program
from backupbench.redaction import redact

BINARY = "minio"
# src/backupbench/layouts/minio.py -> the project folder; scripts/install-minio.sh builds into .tools/bin.
ADDRESS = "127.0.0.1"
HEALTH_PATH = "/minio/health/cluster"
START_TIMEOUT = 60.0
STOP_GRACE = 10.0
FORMAT_FOLDER = ".minio.sys"
_ALPHANUM = string.ascii_letters + string.digits

_running: set["MinioServer"] = set()
_running_lock = threading.Lock()


def _stop_all() -> None:
    with _running_lock:
        servers = list(_running)
    for server in servers:
        server.stop()


atexit.register(_stop_all)


@dataclass(frozen=True)
class S3Connection:
    """What a workload needs to reach a server: endpoint and root credentials (never repr'd)."""

    endpoint: str
    access_key: str = field(repr=False)
    secret_key: str = field(repr=False)


def find_minio(binary: str | Path | None = None) -> str:
    """The MinIO binary: `binary`, $BACKUPBENCH_MINIO, .tools/bin/minio, then PATH."""
    return process.project_tool(BINARY, "BACKUPBENCH_MINIO", binary)


def minio_version(binary: str | Path | None = None) -> str:
    """The MinIO module version recorded by scripts/install-minio.sh, else `minio --version`."""
    path = Path(find_minio(binary))
    recorded = path.with_name("minio.version")
    if recorded.is_file():
        return recorded.read_text().strip()
    return process.run([str(path), "--version"], timeout=10).stdout.splitlines()[0].strip()


def free_port(address: str = ADDRESS) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((address, 0))
        return sock.getsockname()[1]


def random_credentials() -> tuple[str, str]:
    """A root user (20 characters) and password (40), letters and digits, from `secrets`."""
    user = "bb" + "".join(secrets.choice(_ALPHANUM) for _ in range(18))
    password = "".join(secrets.choice(_ALPHANUM) for _ in range(40))
    return user, password


def server_argv(binary: str, drives: list[Path], address: str, port: int,
                certs_dir: Path | None = None) -> list[str]:
    """The command line: no credentials (they are in the environment). process.Background
    makes the server die with backupbench."""
    certs = ["--certs-dir", for_program(certs_dir)] if certs_dir else []
    return [binary, "server", "--address", f"{address}:{port}", *certs,
            *[for_program(d, Syntax.MINIO_DRIVE) for d in drives]]


def on_root_filesystem(path: Path) -> bool:
    return os.stat(path).st_dev == os.stat("/").st_dev


def check_drives(drives: list[Path]) -> list[Path]:
    """The drives as absolute paths, or InputError/RefusedError saying why not."""
    if not drives:
        raise InputError("MinIO needs at least one drive folder")
    if len(drives) > 32:
        raise InputError(f"{len(drives)} drives: backupbench starts MinIO with at most 32 drive folders")
    resolved = [Path(for_program(Path(d).resolve(), Syntax.MINIO_DRIVE)) for d in drives]
    if len(set(resolved)) != len(resolved):
        raise InputError("a MinIO drive folder is listed twice")
    for drive in resolved:
        if not drive.is_dir():
            raise InputError(f"MinIO drive {drive} is not a folder", "create it (a layout's mount point) first")
        entries = [e.name for e in drive.iterdir() if e.name not in ("lost+found",)]
        if entries and FORMAT_FOLDER not in entries:
            raise RefusedError(f"MinIO drive {drive} holds files that are not MinIO's",
                               "give MinIO empty folders; it would take over whatever is in them")
    return resolved


class MinioServer:
    """A MinIO server over `drives`; use as a context manager (or start() / stop())."""

    def __init__(self, drives: list[Path], *, binary: str | Path | None = None, port: int | None = None,
                 log_path: Path | None = None, start_timeout: float = START_TIMEOUT,
                 ci_cd: bool | None = None, extra_env: dict[str, str] | None = None,
                 certs_dir: Path | None = None):
        """certs_dir: a folder with public.crt and private.key makes the server speak HTTPS."""
        self.drives = check_drives(list(drives))
        if certs_dir is not None and not (Path(certs_dir) / "public.crt").is_file():
            raise InputError(f"{certs_dir} has no public.crt", "put public.crt and private.key in it")
        self.certs_dir = Path(certs_dir) if certs_dir is not None else None
        self.binary = find_minio(binary)
        self.address = ADDRESS
        self.port = port
        self.start_timeout = start_timeout
        self.ci_cd = any(on_root_filesystem(d) for d in self.drives) if ci_cd is None else ci_cd
        self.extra_env = dict(extra_env or {})
        self.access_key, self.secret_key = random_credentials()
        self._log_path = log_path
        self._log_tmp: tempfile.TemporaryDirectory | None = None
        self._child: process.Background | None = None

    def __repr__(self) -> str:
        where = self.endpoint if self.port is not None else "not started"
        return f"MinioServer(drives={len(self.drives)}, endpoint={where!r})"

    @property
    def erasure(self) -> bool:
        return len(self.drives) > 1

    @property
    def endpoint(self) -> str:
        if self.port is None:
            raise EngineError("the MinIO server has not been started")
        scheme = "https" if self.certs_dir is not None else "http"
        return f"{scheme}://{self.address}:{self.port}"

    @property
    def log_path(self) -> Path:
        if self._log_path is None:
            self._log_tmp = tempfile.TemporaryDirectory(prefix="backupbench-minio-")
            self._log_path = Path(self._log_tmp.name) / "minio.log"
        return self._log_path

    def connection(self) -> S3Connection:
        return S3Connection(self.endpoint, self.access_key, self.secret_key)

    def env(self) -> dict[str, str]:
        env = {"MINIO_ROOT_USER": self.access_key, "MINIO_ROOT_PASSWORD": self.secret_key,
               "MINIO_BROWSER": "off", "MINIO_UPDATE": "off", **self.extra_env}
        if self.ci_cd:
            env["MINIO_CI_CD"] = "1"
        return env

    def argv(self) -> list[str]:
        return server_argv(self.binary, self.drives, self.address, self.port or 0, self.certs_dir)

    def running(self) -> bool:
        return self._child is not None and self._child.running()

    def start(self) -> "MinioServer":
        if self._child is not None:
            raise EngineError("this MinIO server is already started")
        fixed = self.port is not None
        for attempt in range(3):
            if not fixed:
                self.port = free_port(self.address)
            self._child = process.Background(self.argv(), stdout_path=self.log_path, env=self.env(),
                                              secrets=[self.access_key, self.secret_key])
            with _running_lock:
                _running.add(self)
            try:
                self._wait_ready()
                return self
            except _PortTaken:
                self.stop()
                if fixed or attempt == 2:
                    raise EngineError(f"MinIO could not listen on {self.address}:{self.port}: the port is taken",
                                      "try again") from None
            except BaseException:
                self.stop()
                raise
        raise AssertionError("unreachable")

    def _wait_ready(self) -> None:
        url = self.endpoint + HEALTH_PATH
        # Our own server on loopback: no proxy, and its certificate is not what is checked here.
        handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
        if url.startswith("https"):
            handlers.append(urllib.request.HTTPSHandler(context=ssl._create_unverified_context()))
        opener = urllib.request.build_opener(*handlers)
        deadline = time.monotonic() + self.start_timeout
        while True:
            child = self._child
            assert child is not None
            if not child.running():
                text = self._log_tail() + "\n" + child.stderr_text()
                if "address already in use" in text.lower():
                    raise _PortTaken()
                last = [line for line in text.strip().splitlines() if line.strip()][-1:] or ["no output"]
                raise EngineError(f"MinIO exited while starting (exit {child.proc.returncode}): "
                                  f"{redact(last[0], [self.access_key, self.secret_key])}", f"see {self.log_path}")
            try:
                with opener.open(url, timeout=2) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise EngineError(f"MinIO did not become healthy within {self.start_timeout:g} s "
                                  f"({len(self.drives)} drives)", f"see {self.log_path}")
            time.sleep(0.1)

    def _log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server (SIGINT, then SIGTERM, then SIGKILL; process.Background.stop holds
        stop signals meanwhile); safe to call twice."""
        child, self._child = self._child, None
        if child is not None:
            child.stop(STOP_GRACE)
        with _running_lock:
            _running.discard(self)

    def __enter__(self) -> "MinioServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        if self._log_tmp is not None:
            self._log_tmp.cleanup()
            self._log_tmp = None
            self._log_path = None


class _PortTaken(Exception):
    pass
