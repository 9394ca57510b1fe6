"""What every lab VM test needs on the host, checked once: the reason to skip, or None."""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager

LAB_TOOLS = ("qemu-system-x86_64", "busybox", "depmod", "dpkg-deb")


def lab_missing(*extra_tools: str) -> str | None:
    if os.geteuid() != 0:
        return "the lab needs root"
    for tool in (*LAB_TOOLS, *extra_tools):
        if shutil.which(tool) is None:
            return f"{tool} is missing (run scripts/install-lab-deps.sh and scripts/install-zfs.sh; make test does)"
    return None


def commands_run(results) -> list[str]:
    """Every layout command a run's closed journal says was run, as shell lines."""
    import json

    lines = []
    for journal in (results / "journal").glob("*.closed.jsonl"):
        for line in journal.read_text().splitlines():
            entry = json.loads(line)
            if entry.get("event") == "done":
                lines += [" ".join(argv) for argv in entry["action"]["do"]]
    return lines


def zfs_image():
    """The lab image, which must carry the ZFS module (make test builds it)."""
    import pytest

    from backupbench.lab.image import ensure_image

    image = ensure_image()
    if image.zfs is None:
        pytest.fail("the lab image carries no ZFS module: scripts/install-zfs.sh did not build it")
    return image


@contextmanager
def zfs_lab_vm(tmp_path_factory, disks: str, name: str):
    """A lab VM whose guest can load ZFS, with `disks` throttled to 50 MiB/s and a shared
    folder (vm.shared) the guest writes results into."""
    from backupbench.lab.disks import Throttle, parse_disks
    from backupbench.lab.vm import LabVM
    from backupbench.units import MiB

    image = zfs_image()
    shared = tmp_path_factory.mktemp(f"{name}-share")
    with LabVM(parse_disks(disks), throttle=Throttle(bps_total=50 * MiB), image=image, shares=[shared],
               work_parent=tmp_path_factory.mktemp(f"{name}-work"), needs=frozenset({"zfs"})) as machine:
        machine.shared = shared
        yield machine
