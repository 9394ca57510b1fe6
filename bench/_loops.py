"""Loop devices for the benches that need some: made on sparse files in a temp dir, and
removed again however the bench ends (the device nodes it added too). Needs root and losetup."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import signal
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from backupbench.process import run

LOOP_CTL_REMOVE = 0x4C81


@contextmanager
def made_loops(count: int, prefix: str) -> Iterator[tuple[list[str], Path]]:
    """(the loop devices, their folder). A SIGTERM ends the block as Ctrl-C does
    (KeyboardInterrupt); a second Ctrl-C does not stop the cleanup."""
    def on_term(_signum, _frame):
        raise KeyboardInterrupt

    previous_term = signal.signal(signal.SIGTERM, on_term)
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    indices_before = loop_indices()
    created: list[str] = []
    try:
        print(f"creating {count} loop devices on sparse files in {folder} ...", flush=True)
        create_loops(count, folder, created)
        yield created, folder
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        cleanup(created, indices_before, folder)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, previous_term)


def loop_indices() -> set[int]:
    return {int(n[4:]) for n in os.listdir("/sys/block") if n.startswith("loop") and n[4:].isdigit()}


def create_loops(count: int, folder: Path, created: list[str]) -> None:
    for i in range(count):
        backing = folder / f"{i:03d}.img"
        with open(backing, "wb") as handle:
            handle.truncate(16 * 1024 * 1024)
        created.append(run(["losetup", "--find", "--show", str(backing)], timeout=30).stdout.strip())


def cleanup(created: list[str], indices_before: set[int], folder: Path) -> None:
    for dev in reversed(created):
        result = run(["losetup", "-d", dev], timeout=30, check=False)
        if result.returncode != 0:
            print(f"warning: could not detach {dev}: {result.stderr.strip()}", file=sys.stderr)
    # Remove the loop device nodes this run added, so the machine is left as it was.
    # The kernel refuses (EBUSY) for any that something else has attached since.
    ours = {int(os.path.basename(d)[4:]) for d in created} - indices_before
    if ours and os.path.exists("/dev/loop-control"):
        fd = os.open("/dev/loop-control", os.O_RDWR)
        try:
            for index in sorted(ours):
                try:
                    fcntl.ioctl(fd, LOOP_CTL_REMOVE, index)
                except OSError as exc:
                    if exc.errno not in (errno.EBUSY, errno.ENODEV, errno.ENXIO):
                        print(f"warning: could not remove loop{index}: {exc}", file=sys.stderr)
        finally:
            os.close(fd)
    shutil.rmtree(folder, ignore_errors=True)
