"""The one place external commands run.

Argument lists only (never a shell), a timeout on everything, every command logged with
secrets hidden (redaction.py), and a typed ProcessError carrying the tool's stderr on failure.

Every child dies with backupbench: should backupbench be killed outright (SIGKILL, the
out-of-memory killer), the kernel sends the child SIGKILL too (util-linux's setpriv
--pdeathsig), so no fio goes on writing and no MinIO or QEMU goes on running. Long-running
children (`Background`) are also reported to the spawn observers, which write them into
the run's journal, so `backupbench cleanup` can make sure they are gone.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from backupbench import stopping
from backupbench.errors import ProcessError, ProcessTimeout, ToolMissingError
from backupbench.hostfiles import HostFiles
from backupbench.redaction import redact, redact_argv

log = logging.getLogger("backupbench.process")

# Debian package that provides each tool we call; used for the install hint.
# command -> (Debian/Ubuntu package, Rocky/RHEL package or None where RHEL ships none)
_PACKAGES = {
    "fio": ("fio", "fio"),
    "iostat": ("sysstat", "sysstat"),
    "losetup": ("mount", "util-linux"),
    "mkfs.xfs": ("xfsprogs", "xfsprogs"),
    "mkfs.btrfs": ("btrfs-progs", None),
    "mkfs.ext4": ("e2fsprogs", "e2fsprogs"),
    "qemu-system-x86_64": ("qemu-system-x86", "qemu-kvm"),
}
INSTALL_HINTS = {cmd: f"apt-get install {deb}" + (f" (Rocky/RHEL: dnf install {rpm})" if rpm else " (RHEL has none)")
                 for cmd, (deb, rpm) in _PACKAGES.items()}


def render(argv: Sequence[str], secrets: Iterable[str] = ()) -> str:
    """The command as a user could paste it into a shell, secrets hidden."""
    return shlex.join(redact_argv(argv, secrets))


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        hint = INSTALL_HINTS.get(name)
        raise ToolMissingError(f"{name} is not installed", f"install it with: {hint}" if hint else None)
    return path


# Where scripts/install-minio.sh builds the Go tools (MinIO, the S3 load generator).
PROJECT_TOOLS = Path(__file__).resolve().parents[2] / ".tools" / "bin"


@dataclass(frozen=True)
class ToolPlaces:
    """Where a project-built tool may be, besides PATH: `launcher` is what this process was
    started as (a pex file of the offline bundle: $PEX, else sys.argv[0])."""

    project_tools: Path
    scripts: Path
    launcher: Path | None

    @classmethod
    def here(cls) -> "ToolPlaces":
        launcher = os.environ.get("PEX") or (sys.argv[0] if sys.argv and sys.argv[0] else None)
        return cls(PROJECT_TOOLS, Path(sysconfig.get_path("scripts")), Path(launcher) if launcher else None)

    def candidates(self, name: str) -> list[Path]:
        found = [self.project_tools / name, self.scripts / name]  # a checkout; an installed bundle
        if self.launcher is not None:
            # The bundle unpacked: backupbench-cp3X.pex beside bin/backupbench-s3load.
            folder = self.launcher.expanduser().absolute().parent
            found += [folder / "bin" / name, folder / name]
        return found

    def missing(self, name: str, env_var: str | None) -> ToolMissingError:
        override = f", or set {env_var}=/path/to/{name}" if env_var else ""
        if (self.project_tools.parents[1] / "scripts" / "install-minio.sh").is_file():
            return ToolMissingError(f"{name} is not built", "build it with: scripts/install-minio.sh "
                                                             f"(make deps does it){override}")
        return ToolMissingError(f"{name} not found beside backupbench",
                                f"in the offline bundle it is bin/{name}: run the .pex from the unpacked "
                                f"bundle's folder (bin/ beside it), or install with its install.sh{override}")


def project_tool(name: str, env_var: str | None = None, explicit: str | Path | None = None,
                 places: ToolPlaces | None = None) -> str:
    """A tool the project builds itself: `explicit`, then $env_var, then .tools/bin, then the
    environment's bin (an installed bundle), then beside the running pex (the bundle's bin/),
    then PATH."""
    places = places or ToolPlaces.here()
    candidates = [Path(p) for p in (explicit, os.environ.get(env_var) if env_var else None) if p]
    for path in candidates + places.candidates(name):
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    found = shutil.which(name)
    if found:
        return found
    raise places.missing(name, env_var)


# ---- who a process is -----------------------------------------------------------------------

_HOST = HostFiles()


def boot_id() -> str:
    """This boot of the machine: process ids repeat across boots, boot ids do not."""
    return _HOST.read_value("/proc/sys/kernel/random/boot_id") or "unknown-boot"


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat from field 3 on. The command name (field 2) may hold spaces and
    parentheses: the fields count from its closing parenthesis."""
    try:
        stat = _HOST.read_text(f"/proc/{pid}/stat")
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()


def start_ticks(pid: int) -> int | None:
    """When the process started (clock ticks after boot); None if there is no such process."""
    fields = _stat_fields(pid)
    try:
        return int(fields[19]) if fields else None
    except (IndexError, ValueError):
        return None


def identity(pid: int) -> str | None:
    """'<boot id> <pid> <start ticks>': names one process for ever, unlike a pid."""
    ticks = start_ticks(pid)
    return None if ticks is None else f"{boot_id()} {pid} {ticks}"


def is_alive(ident: str) -> bool:
    """Whether the process `identity()` named is still running (on this boot)."""
    try:
        boot, pid, ticks = ident.split()
        return boot == boot_id() and start_ticks(int(pid)) == int(ticks) and running(int(pid))
    except ValueError:
        return False


def running(pid: int) -> bool:
    """Whether process `pid` exists and has not ended: a zombie has (only its reaping is left).
    Never raises for a process that ends meanwhile."""
    fields = _stat_fields(pid)
    return bool(fields) and fields[0] != "Z"


# ---- dying with backupbench ---------------------------------------------------------------

def _with_pdeathsig(argv: list[str]) -> list[str]:
    # SIGKILL, not SIGTERM: a politely stopped fio takes a second or two to finish, and
    # writes meanwhile. fio's jobs are threads (thread=1 in every job file), so this one
    # signal ends all of them.
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--", *argv] if setpriv else argv


SpawnObserver = Callable[["Background", str], None]  # (child, "started" | "ended")
_observers: list[SpawnObserver] = []
_observers_lock = threading.Lock()
# Children started for a run carry its id in their environment: `cleanup` stops a process only
# if it still does (a pid and start time alone could be found in /proc by anyone).
RUN_TAG_ENV = "BACKUPBENCH_RUN"
_run_tags: list[str] = []


@contextmanager
def spawns_reported_to(observer: SpawnObserver, run_tag: str) -> Iterator[None]:
    """Within the block, every Background child is started with `run_tag` in its environment,
    and reported to `observer` when it starts and ends."""
    with _observers_lock:
        _observers.append(observer)
        _run_tags.append(run_tag)
    try:
        yield
    finally:
        with _observers_lock:
            _observers.remove(observer)
            _run_tags.remove(run_tag)


def _current_run_tag() -> str | None:
    with _observers_lock:
        return _run_tags[-1] if _run_tags else None


def run_tag(pid: int) -> str | None:
    """The run id a process was started for (its BACKUPBENCH_RUN), if it can be read."""
    try:
        environ = _HOST.read_text(f"/proc/{pid}/environ")
    except OSError:
        return None
    for entry in environ.split("\0"):
        name, _, value = entry.partition("=")
        if name == RUN_TAG_ENV:
            return value
    return None


def _report(child: "Background", event: str) -> None:
    with _observers_lock:
        observers = list(_observers)
    for observer in observers:
        observer(child, event)


@dataclass
class Result:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


def run(
    argv: Sequence[str],
    *,
    timeout: float = 60.0,
    check: bool = True,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    secrets: Iterable[str] = (),
) -> Result:
    argv = [str(a) for a in argv]
    secrets = list(secrets)
    require_tool(argv[0])
    log.debug("run: %s", render(argv, secrets))
    try:
        # stdin from /dev/null: a tool that would prompt (vgremove, pvcreate) gets end-of-input
        # and declines, instead of waiting invisibly for the user's terminal.
        completed = subprocess.run(
            _with_pdeathsig(argv), capture_output=True, text=True, timeout=timeout, cwd=cwd,
            stdin=subprocess.DEVNULL, env={**os.environ, **env} if env else None,
        )
    except subprocess.TimeoutExpired as exc:
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        raise ProcessTimeout(redact_argv(argv, secrets), None, redact(stderr, secrets),
                             f"{argv[0]} did not finish within {timeout:g} s") from exc
    result = Result(argv, completed.returncode, completed.stdout, completed.stderr)
    if check and completed.returncode != 0:
        raise ProcessError(redact_argv(argv, secrets), completed.returncode, redact(completed.stderr, secrets))
    return result


class Background:
    """A long-running command (fio, a server) in its own session.

    Its own session means a terminal's Ctrl-C reaches only us; we decide how the child
    stops, so it can be stopped cleanly and waited for.
    """

    def __init__(self, argv: Sequence[str], *, cwd: Path | None = None,
                 stdout_path: Path | None = None, env: dict[str, str] | None = None,
                 secrets: Iterable[str] = (), die_with_parent: bool = True):
        self.argv = [str(a) for a in argv]
        require_tool(self.argv[0])
        spawn = _with_pdeathsig(self.argv) if die_with_parent else self.argv
        self._secrets = list(secrets)
        log.debug("start: %s", render(self.argv, self._secrets))
        self._stdout_file = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
        # A file, not a pipe: a chatty child must never block on a pipe nobody reads.
        self._stderr_file = tempfile.TemporaryFile()
        tag = _current_run_tag()
        child_env = {**os.environ, **(env or {}), **({RUN_TAG_ENV: tag} if tag else {})}
        self._ended = False
        # Started and reported in one piece: a stop signal in between would leave a child
        # that no journal knows of.
        with stopping.held():
            self.proc = subprocess.Popen(
                spawn, cwd=cwd, stdout=self._stdout_file, stderr=self._stderr_file,
                stdin=subprocess.DEVNULL, start_new_session=True, env=child_env,
            )
            self.identity = identity(self.proc.pid)
            _report(self, "started")

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait(self, timeout: float | None = None) -> Result:
        self.proc.wait(timeout=timeout)
        stderr = self.stderr_text()
        self._close()
        return Result(self.argv, self.proc.returncode, "", stderr)

    @property
    def name(self) -> str:
        return os.path.basename(self.argv[0])

    def stderr_text(self) -> str:
        self._stderr_file.seek(0)
        return self._stderr_file.read().decode(errors="replace")

    def check(self, result: Result) -> Result:
        if result.returncode != 0:
            raise ProcessError(redact_argv(self.argv, self._secrets), result.returncode,
                               redact(result.stderr, self._secrets))
        return result

    def stop(self, grace: float = 10.0) -> None:
        """Ask politely (SIGINT, which fio handles by finishing up), then insist. A stop
        signal meanwhile waits: the child is gone before anything else happens."""
        with stopping.held():
            self._stop(grace)

    def _stop(self, grace: float) -> None:
        if self.proc.poll() is None:
            for sig, wait_for in ((signal.SIGINT, grace), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(self.proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(timeout=wait_for)
                    break
                except subprocess.TimeoutExpired:
                    continue
        self._close()

    def _close(self) -> None:
        if self.proc.poll() is not None and not self._ended:
            self._ended = True
            _report(self, "ended")
        if not self._stderr_file.closed and self.proc.poll() is not None:
            self._stderr_file.close()
        if self._stdout_file not in (None, subprocess.DEVNULL):
            self._stdout_file.close()
            self._stdout_file = subprocess.DEVNULL
