"""The lab's disks served through NBD by nbdkit with the seeking disk model on top.

Each disk image stays a sparse file in the lab's work folder (lab/disks.py makes it); one nbdkit
per disk serves it with its file plugin under the diskmodel filter (native/diskmodel, built into
.tools/lib by scripts/build-diskmodel.sh) on a unix socket in the same folder (or, where that
path would pass a socket's 107 bytes, in a short folder of its own under the system's temporary
folder, removed with the servers), and QEMU attaches the socket instead of the file (lab/qemu.py). One process per disk, not one nbdkit with several
exports: the filter's head position and its queue are then per disk, as on real disks, with no
bookkeeping of exports in C. nbdkit runs one thread per request in flight (its PARALLEL thread
model); it gets one more than the model's queue depth, the request on the platter and the depth
waiting, so the filter's depth, not nbdkit's threads (16 by default), bounds what the disk
chooses among. QEMU sends at most 16 requests at once to an NBD disk (QEMU_IN_FLIGHT), so in the
lab a depth over 16 is never filled.

nbdkit is a `process.Background`: it dies with backupbench (pdeathsig), and within
`backupbench lab`'s journal it is journalled like QEMU, so `cleanup` finds one left behind.
It is started before QEMU and stopped after it (QEMU must not see its disks go away).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Sequence

from backupbench import process
from backupbench.errors import BackupbenchError, ToolMissingError
from backupbench.lab.diskmodel import DiskModel, read_stats
from backupbench.lab.disks import Throttle

NBDKIT = "nbdkit"
FILTER_NAME = "nbdkit-diskmodel-filter.so"
FILTER_ENV = "BACKUPBENCH_DISKMODEL_FILTER"
# Beside the project's other built tools (.tools/bin): a shared object is no command for PATH.
FILTER_PLACE = process.PROJECT_TOOLS.parent / "lib" / FILTER_NAME
READY_TIMEOUT = 15.0
# A unix socket's path holds at most 107 bytes (sun_path); a deeper work folder gets its sockets
# in a short folder of their own in the system's temporary folder.
SOCKET_PATH_MAX = 107
# MAX_NBD_REQUESTS of QEMU's NBD client (7.2, and later releases): what the guest queues beyond it
# waits in QEMU, in order. So the disk chooses among at most 15 while one is on the platter.
QEMU_IN_FLIGHT = 16


class DiskServerError(BackupbenchError):
    """nbdkit did not start serving a lab disk."""


def filter_path() -> Path:
    """The built filter: $BACKUPBENCH_DISKMODEL_FILTER, else .tools/lib."""
    path = Path(os.environ.get(FILTER_ENV) or FILTER_PLACE)
    if not path.is_file():
        raise ToolMissingError(f"the lab's disk model ({path}) is not built",
                               "build it with scripts/build-diskmodel.sh (scripts/install-lab-deps.sh runs it; "
                               f"make deps does), or set {FILTER_ENV}")
    return path


def require() -> Path:
    """nbdkit and the filter, or the one line saying what to install; before any file is made."""
    if shutil.which(NBDKIT) is None:
        raise ToolMissingError("nbdkit is not installed (the seeking lab disks need it)",
                               "install it with scripts/install-lab-deps.sh (apt-get install nbdkit)")
    return filter_path()


def nbdkit_argv(image: Path, socket: Path, pidfile: Path, model: DiskModel, filter_so: Path,
                stats: Path | None = None, log: Path | None = None) -> list[str]:
    """One disk's server: foreground (its life is ours), ready when the pid file appears."""
    argv = [NBDKIT, "--foreground", "--unix", str(socket), "--pidfile", str(pidfile),
            f"--threads={model.queue_depth + 1}", f"--filter={filter_so}", "file", f"file={image}",
            *model.filter_params()]
    if stats is not None:
        argv.append(f"diskmodel-stats={stats}")
    if log is not None:
        argv.append(f"diskmodel-log={log}")
    return argv


def describe(model: DiskModel | None, throttle: Throttle) -> str:
    """What the lab's disks are, for its progress line."""
    if model is None:
        return throttle.describe()
    return model.describe() + ("" if throttle.unlimited else f", {throttle.describe()}")


class DiskServers:
    """One nbdkit per image; `sockets` for QEMU, `stats(i)` for what disk i served."""

    def __init__(self, model: DiskModel, folder: Path, filter_so: Path | None = None):
        self.model = model
        self.folder = folder
        self.filter_so = filter_so or require()
        self.servers: list[process.Background] = []
        self.sockets: list[Path] = []
        self._socket_folder: Path | None = None

    def socket_folder(self) -> Path:
        """Where the sockets go: the work folder, or a short one when its paths would be too long."""
        if self._socket_folder is None:
            longest = self.folder / "d999.nbd"
            self._socket_folder = (self.folder if len(os.fsencode(longest)) <= SOCKET_PATH_MAX
                                   else Path(tempfile.mkdtemp(prefix="bb-nbd-")))
        return self._socket_folder

    def stats_file(self, index: int) -> Path:
        return self.folder / f"d{index}.diskmodel-stats"

    def start(self, images: Sequence[Path], log: bool = False) -> list[Path]:
        try:
            for index, image in enumerate(images):
                self._start_one(index, image, log)
        except BaseException:
            self.stop()
            raise
        return self.sockets

    def _start_one(self, index: int, image: Path, log: bool) -> None:
        socket, pidfile = self.socket_folder() / f"d{index}.nbd", self.folder / f"d{index}.nbdkit.pid"
        argv = nbdkit_argv(image, socket, pidfile, self.model, self.filter_so, self.stats_file(index),
                           self.folder / f"d{index}.diskmodel-log" if log else None)
        server = process.Background(argv, cwd=self.folder)
        self.servers.append(server)
        deadline = time.monotonic() + READY_TIMEOUT
        while not pidfile.exists():
            if not server.running():
                said = server.stderr_text().strip().splitlines()
                raise DiskServerError(f"nbdkit could not serve lab disk {index}: "
                                      f"{said[-1] if said else f'exit {server.proc.poll()}'}")
            if time.monotonic() > deadline:
                raise DiskServerError(f"nbdkit did not serve lab disk {index} within {READY_TIMEOUT:g} s")
            time.sleep(0.02)
        self.sockets.append(socket)

    @property
    def pids(self) -> list[int]:
        return [server.proc.pid for server in self.servers]

    def stats(self, index: int) -> dict[str, int]:
        """Disk `index`'s totals as the filter last wrote them (at most a second old; final once
        stopped)."""
        try:
            return read_stats(self.stats_file(index).read_text())
        except FileNotFoundError:
            return {}

    def stop(self) -> None:
        # nbdkit ends on SIGINT after the request in hand: its stats are written on the way out.
        for server in self.servers:
            server.stop(grace=5.0)
        self.servers = []
        folder, self._socket_folder = self._socket_folder, None
        if folder is not None and folder != self.folder:
            shutil.rmtree(folder, ignore_errors=True)
