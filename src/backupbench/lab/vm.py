"""LabVM: a throwaway QEMU VM with throttled virtual disks that runs commands as root.

    with LabVM(parse_disks("4x4GiB"), throttle=Throttle(bps_total=50 * MiB)) as vm:
        result = vm.run(["lvs"])            # GuestResult(returncode, output, seconds)
        vm.run_shell("pvcreate /dev/vda")   # a shell script instead of an argv
        vm.fetch("/tmp/fio.json", dest)     # copy a guest file to the host

On exit, error or Ctrl-C the VM is stopped (QEMU killed if it does not power off in time)
and its work folder with the disk images is removed (unless keep_images). The guest sees the
host's root read-only with a throwaway writable layer on top, so every host tool and this
very Python environment run inside it; extra host folders (`shares`) are mounted read-write
at the same path in the guest, which is how results come home.
"""

from __future__ import annotations

import logging
import os
import secrets
import select
import shlex
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from backupbench import process, stopping
from backupbench.artefacts import TAG, ArtefactName
from backupbench.errors import BackupbenchError, InputError, ToolMissingError
from backupbench.lab import disks as lab_disks, nbd, zfs_module
from backupbench.lab.agent import AgentStream, Event, parse_cpu_pair
from backupbench.lab.diskmodel import DiskModel
from backupbench.lab.disks import DiskSpec, Throttle
from backupbench.lab.image import LabImage, ensure_image
from backupbench.lab.qemu import QEMU, Disk, Share, VMConfig, describe_exit, qemu_argv
from backupbench.units import GiB, MiB

log = logging.getLogger("backupbench.lab")

Progress = Callable[[str], None]
Stream = Callable[[str], None]

GUEST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEFAULT_MEMORY = 1 * GiB
DEFAULT_BOOT_TIMEOUT = 180.0
DEFAULT_WORK_PARENT = Path("/var/tmp")
# A journalled lab's work folder (`work_name`), named by its lab run id ("lab-...").
WORK_FOLDER = ArtefactName(f"{TAG}-{{}}", "lab work folder")
CPU_SATURATED = 0.9


class LabError(BackupbenchError):
    """The lab VM failed: it did not boot, died, or a command timed out."""


@dataclass
class GuestResult:
    argv: list[str] | str
    returncode: int
    output: str  # stdout and stderr together, as a terminal shows them
    seconds: float
    guest_cpu_busy: float | None = None  # 0..1 over all vCPUs while the command ran

    @property
    def cpu_saturated(self) -> bool:
        """The guest's CPU was (nearly) always busy: TCG, not the disks, may have set the pace."""
        return self.guest_cpu_busy is not None and self.guest_cpu_busy >= CPU_SATURATED

    def check(self) -> "GuestResult":
        if self.returncode != 0:
            tail = self.output.strip().splitlines()[-1] if self.output.strip() else "no output"
            shown = self.argv if isinstance(self.argv, str) else shlex.join(self.argv)
            raise LabError(f"in the lab VM, `{_short(shown)}` failed (exit {self.returncode}): {tail}")
        return self


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def python_environment() -> dict[str, str]:
    """PATH and PYTHONPATH that make the guest run this very Python with these packages.

    The guest sees the host's files at the same paths, so the interpreter's folder (a venv's
    bin: python3, backupbench) goes first in PATH, and the import path entries that the
    interpreter does not add by itself (site-packages of a venv, a source tree) go into
    PYTHONPATH.
    """
    exe_dir = str(Path(sys.executable).parent)
    stdlib_prefixes = tuple({sys.base_prefix, sys.base_exec_prefix})
    extra = [p for p in sys.path if p and os.path.isdir(p) and not p.startswith(stdlib_prefixes)]
    env = {"PATH": f"{exe_dir}:{GUEST_PATH}"}
    if extra:
        env["PYTHONPATH"] = ":".join(dict.fromkeys(os.path.abspath(p) for p in extra))
    return env


@dataclass
class LabVM:
    disks: Sequence[DiskSpec]
    throttle: Throttle = field(default_factory=Throttle)
    memory: int = DEFAULT_MEMORY
    cpus: int = 2
    shares: Sequence[Path] = ()  # host folders mounted read-write at the same path in the guest
    image: LabImage | None = None
    cache_dir: Path | None = None  # image cache root (default: $XDG_CACHE_HOME/backupbench/lab)
    work_parent: Path = DEFAULT_WORK_PARENT  # where the run folder with the disk images goes
    keep_images: bool = False
    # The work folder's name under work_parent (default: a random backupbench-lab-*), so a
    # caller can write it into a journal before it exists.
    work_name: str | None = None
    progress: Progress | None = None
    boot_timeout: float = DEFAULT_BOOT_TIMEOUT
    # Kernel features the job needs beyond the image's usual modules ("zfs"): refused with
    # the reason before any disk image is made when the image lacks them.
    needs: frozenset[str] = frozenset()
    # Serve every disk through nbdkit with this seeking disk model (lab/nbd.py) instead of QEMU's file.
    disk_model: DiskModel | None = None

    # set while running
    disk_servers: nbd.DiskServers | None = field(default=None, init=False)
    work_dir: Path | None = field(default=None, init=False)
    boot_seconds: float | None = field(default=None, init=False)  # QEMU start -> agent ready
    qemu_started: float | None = field(default=None, init=False)  # time.monotonic() at QEMU start
    notes: list[str] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if not self.disks:
            raise InputError("the lab needs at least one disk")
        if self.memory % MiB or self.memory < 256 * MiB:
            raise InputError(f"--memory must be whole MiB and at least 256 MiB, not {self.memory} bytes")
        self._qemu: process.Background | None = None
        self._out_fd: int | None = None
        self._in_fd: int | None = None
        self._stream: AgentStream | None = None
        self._nonce = secrets.token_hex(8)
        self._lock = threading.Lock()
        self._broken: str | None = None
        self._commands = 0
        self._busy = False  # a command is running in the guest: closing kills instead of asking

    # ---- paths -------------------------------------------------------------------------
    @property
    def ctl_dir(self) -> Path:
        assert self.work_dir is not None, "the VM is not running"
        return self.work_dir / "ctl"

    @property
    def out_dir(self) -> Path:
        """A host folder the guest writes to: $BACKUPBENCH_LAB_OUT in guest commands."""
        return self.ctl_dir / "out"

    @property
    def console_log(self) -> Path:
        assert self.work_dir is not None
        return self.work_dir / "console.log"

    def disk_paths(self) -> list[Path]:
        assert self.work_dir is not None
        return [self.work_dir / lab_disks.image_name(i) for i in range(len(self.disks))]

    @staticmethod
    def guest_device(index: int) -> str:
        """The guest's name of disk `index` (/dev/vda, ...); also /dev/disk/by-id/virtio-lab-dN."""
        return "/dev/vd" + "abcdefghijklmnopqrstuvwxyz"[index]

    def guest_devices(self) -> list[str]:
        return [self.guest_device(i) for i in range(len(self.disks))]

    # ---- life cycle ----------------------------------------------------------------------
    def __enter__(self) -> "LabVM":
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _say(self, message: str) -> None:
        log.debug("lab: %s", message)
        if self.progress:
            self.progress(message)

    def start(self) -> None:
        # Everything that can be refused is checked before the image build and any file.
        process.require_tool(QEMU)
        if self.disk_model is not None:
            nbd.require()
        for share in self.shares:
            if not Path(share).is_dir():
                raise InputError(f"lab share {share} is not a directory")
        parent = Path(self.work_parent)
        parent.mkdir(parents=True, exist_ok=True)
        lab_disks.check_space(parent, self.disks)
        if self.image is None:
            self._say("guest image: checking the cache")
            self.image = ensure_image(self.cache_dir, progress=lambda m: self._say(f"guest image: {m}"))
        if "zfs" in self.needs and self.image.zfs is None:
            raise ToolMissingError(f"the lab guest's kernel {self.image.kernel_release} has no ZFS module",
                                   zfs_module.BUILD_HINT)
        if self.work_name:
            self.work_dir = parent / self.work_name
            self.work_dir.mkdir(mode=0o700)
        else:
            self.work_dir = Path(tempfile.mkdtemp(prefix="backupbench-lab-", dir=parent))
        self.out_dir.mkdir(parents=True)
        direct = lab_disks.supports_direct_io(self.work_dir)
        if not direct:
            self.notes.append(f"{parent} refuses O_DIRECT (tmpfs?): disk images use the host page cache")
        self._say(f"creating {lab_disks.format_disks(self.disks)} sparse disk images in {self.work_dir}")
        images = lab_disks.create_images(self.work_dir, self.disks)
        sockets = self._serve(images)
        self._write_config()
        agent = self.work_dir / "agent"
        for suffix in (".in", ".out"):
            os.mkfifo(f"{agent}{suffix}", 0o600)
        # Our ends first: O_RDWR never blocks on a FIFO and keeps it open whatever QEMU does.
        self._out_fd = os.open(f"{agent}.out", os.O_RDWR | os.O_NONBLOCK)
        self._in_fd = os.open(f"{agent}.in", os.O_RDWR)
        self._stream = AgentStream(self._nonce)
        config = VMConfig(
            vmlinux=self.image.vmlinux, initramfs=self.image.initramfs, console_log=self.console_log,
            agent_pipe=agent, memory=self.memory, cpus=self.cpus,
            disks=tuple(Disk(path, lab_disks.serial(i), sockets[i] if sockets else None)
                        for i, path in enumerate(images)),
            throttle=self.throttle, shares=(Share("lab-ctl", self.ctl_dir), *self._extra_shares()), direct_io=direct,
        )
        argv = qemu_argv(config)
        self._say(f"booting the VM ({self.cpus} vCPU, {self.memory // MiB} MiB, TCG; disks "
                  f"{nbd.describe(self.disk_model, self.throttle)})")
        started = self.qemu_started = time.monotonic()
        self._qemu = process.Background(argv, cwd=self.work_dir, stdout_path=self.work_dir / "qemu.out")
        self._wait_for("ready", self.boot_timeout, None)
        self.boot_seconds = time.monotonic() - started
        self._say(f"VM ready in {self.boot_seconds:.1f} s")

    def _serve(self, images: list[Path]) -> list[Path]:
        if self.disk_model is None:
            return []
        self.disk_servers = nbd.DiskServers(self.disk_model, images[0].parent)
        return self.disk_servers.start(images)

    def _extra_shares(self) -> list[Share]:
        return [Share(f"lab-s{i}", Path(p).resolve()) for i, p in enumerate(self.shares)]

    def _write_config(self) -> None:
        lines = [f"LAB_NONCE={self._nonce}", f"LAB_CTL_PATH={shlex.quote(str(self.ctl_dir))}"]
        (self.ctl_dir / "config").write_text("\n".join(lines) + "\n")
        for share in self._extra_shares():
            if "\n" in str(share.host_path):
                raise InputError(f"a lab share path cannot contain a newline: {share.host_path!r}")
        shares = [f"{s.tag} {'ro' if s.readonly else 'rw'} {s.host_path}\n" for s in self._extra_shares()]
        (self.ctl_dir / "shares").write_text("".join(shares))

    def close(self) -> None:
        """Power off (or kill) the VM, remove the disk images and the work folder. A stop
        signal meanwhile waits until they are gone."""
        with stopping.held():
            self._close()

    def _close(self) -> None:
        try:
            if self._qemu is not None:
                try:
                    polite = self._qemu.running() and self._broken is None and not self._busy
                    if polite and self._in_fd is not None:
                        os.write(self._in_fd, b"EXIT\n")  # the guest syncs and powers off
                        self._qemu.proc.wait(timeout=20)
                except Exception:  # noqa: BLE001 - whatever happened, it is stopped below
                    pass
                finally:
                    # SIGINT (QEMU exits at once), then SIGTERM, then SIGKILL.
                    self._qemu.stop(grace=5.0)
                    self._qemu = None
        finally:
            if self.disk_servers is not None:
                self.disk_servers.stop()  # after QEMU: it must not see its disks go
            for fd in (self._in_fd, self._out_fd):
                if fd is not None:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            self._in_fd = self._out_fd = None
            if self.work_dir is not None and self.work_dir.exists():
                if self.keep_images:
                    self._say(f"kept the disk images and logs in {self.work_dir}")
                else:
                    shutil.rmtree(self.work_dir, ignore_errors=True)

    # ---- talking to the guest -------------------------------------------------------------
    def _dead(self, what: str) -> LabError:
        assert self._qemu is not None
        stderr = self._qemu.stderr_text().strip()
        self._broken = what
        console = self._console_lines()
        self._log_console(console)
        detail = stderr.splitlines()[-1] if stderr else (console[-1] if console else "no output")
        return LabError(f"the lab VM stopped {what}: {detail}{describe_exit(self._qemu.proc.poll())}",
                        self._console_hint())

    def _console_lines(self) -> list[str]:
        try:
            text = self.console_log.read_text(errors="replace").replace("\r", "")
        except (OSError, AssertionError):
            return []
        return [line for line in text.splitlines() if line.strip()]

    def _log_console(self, lines: list[str], count: int = 20) -> None:
        """The end of the guest's console, for diagnosis (the work folder is removed)."""
        if lines:
            log.warning("last lines of the lab VM's console:\n%s", "\n".join(lines[-count:]))

    def _console_hint(self) -> str:
        if self.keep_images:
            return f"the guest's console log is {self.console_log}"
        return "rerun with --keep-images to keep the guest's console log"

    def _wait_for(self, kind: str, timeout: float | None, stream: Stream | None) -> tuple[str, Event]:
        """Read the agent port until an event of `kind`; (output text, the event)."""
        assert self._out_fd is not None and self._stream is not None and self._qemu is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        collected: list[str] = []
        while True:
            ready, _, _ = select.select([self._out_fd], [], [], 0.2)
            if ready:
                try:
                    data = os.read(self._out_fd, 65536)
                except BlockingIOError:
                    data = b""
                text, events = self._stream.feed(data)
                if text:
                    collected.append(text)
                    if stream:
                        stream(text)
                for event in events:
                    if event.kind == "fail":
                        self._broken = event.value
                        self._log_console(self._console_lines())
                        raise LabError(f"the lab VM could not start: {event.value}", self._console_hint())
                    if event.kind == kind:
                        return "".join(collected), event
            elif not self._qemu.running():
                raise self._dead("before it was ready" if kind == "ready" else "while running a command")
            if deadline is not None and time.monotonic() > deadline:
                self._broken = f"no answer within {timeout:g} s"
                what = "boot" if kind == "ready" else "finish the command"
                raise LabError(f"the lab VM did not {what} within {timeout:g} s",
                               "TCG is slow on a busy host; raise the timeout or rerun")

    def run(self, argv: Sequence[str] | str, *, timeout: float | None = None, stream: Stream | None = None,
            env: dict[str, str] | None = None, cwd: str = "/", tty: bool = False) -> GuestResult:
        """Run `argv` (a list, or a shell script as one string) as root in the guest.

        Output (stdout and stderr together) is passed to `stream` as it arrives and returned.
        It goes through a pipe, as captured output would; `tty=True` gives the command a
        terminal instead (live progress bars when a person watches).
        A nonzero exit code is returned, not raised (use `.check()`); a timeout or a dead VM
        raises LabError and the VM is not usable afterwards.
        """
        if self._broken:
            raise LabError(f"the lab VM is not usable: {self._broken}")
        if self._qemu is None or self._in_fd is None:
            raise LabError("the lab VM is not running")
        body = argv if isinstance(argv, str) else "exec " + shlex.join([str(a) for a in argv])
        with self._lock:
            self._commands += 1
            script = self.ctl_dir / f"cmd-{self._commands:04d}.sh"
            script.write_text(self._script(body, env or {}, cwd))
            started = time.monotonic()
            log.debug("lab run: %s", _short(body, 400))
            self._busy = True
            os.write(self._in_fd, f"{'RUNTTY' if tty else 'RUN'} {script}\n".encode())
            output, done = self._wait_for("done", timeout, stream)
            self._busy = False
            script.unlink(missing_ok=True)
        return GuestResult(list(argv) if not isinstance(argv, str) else argv, int(done.value), output,
                           time.monotonic() - started, parse_cpu_pair(done.extra))

    def run_shell(self, script: str, **kwargs) -> GuestResult:
        return self.run(script, **kwargs)

    def _script(self, body: str, env: dict[str, str], cwd: str) -> str:
        base = {
            **python_environment(), "HOME": "/root", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "dumb",
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
            # /run/udev holds the init's stand-in for udev's database (for zpool), but no udevd
            # runs: mdadm, seeing /run/udev, would leave its /dev/md/NAME links to udev.
            "MDADM_NO_UDEV": "1",
            "BACKUPBENCH_LAB": "1", "BACKUPBENCH_LAB_OUT": str(self.out_dir), **env,
        }
        exports = "".join(f"export {name}={shlex.quote(value)}\n" for name, value in base.items())
        return f"{exports}cd {shlex.quote(cwd)} || exit 125\n{body}\n"

    def fetch(self, guest_path: str, dest: Path, *, timeout: float = 600) -> Path:
        """Copy a guest file or folder to `dest` on the host (through the control share)."""
        name = f"fetch-{secrets.token_hex(4)}"
        self.run(["cp", "-a", "--", guest_path, str(self.out_dir / name)], timeout=timeout).check()
        dest = Path(dest)
        if dest.is_dir():
            dest = dest / Path(guest_path).name
        shutil.move(str(self.out_dir / name), dest)
        return dest
