"""Who still has a device mounted after our own umount: a process in another mount namespace.

A process that makes its own mount namespace (`ip netns exec`, `unshare -m`, a container)
gets a copy of every mount of that moment. Where `/` is a private mount (no propagation,
common outside systemd), a later umount here does not reach that copy: the filesystem stays
mounted there, the device stays busy, and wipefs, mdadm --stop or zpool labelclear fail with
"Device or resource busy" although `findmnt` here shows nothing. The teardown names such a
process, so that the user knows what to end before `backupbench cleanup`.
"""

from __future__ import annotations

import os
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ForeignMount:
    pid: int
    command: str
    mount_point: str
    device: str

    def sentence(self) -> str:
        return (f"{self.device} is still mounted at {self.mount_point} in the mount namespace of process "
                f"{self.pid} ({self.command}), started while it was mounted here: end that process "
                f"(or run `nsenter -t {self.pid} -m umount {shlex.quote(self.mount_point)}`), then `backupbench cleanup`")


def _device_number(path: str) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISBLK(st.st_mode):
        return None
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def _mounts_of(mountinfo: str, number: str) -> list[str]:
    """Mount points of `mountinfo` (proc(5): field 3 is major:minor, field 5 the mount point)
    whose device is `number`."""
    points = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[2] == number:
            points.append(fields[4].replace("\\040", " "))
    return points


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def foreign_mounts(devices: list[str], proc: Path = Path("/proc")) -> list[ForeignMount]:
    """Mounts of `devices` held by processes in a mount namespace other than ours: one
    process (the lowest PID) per namespace and device."""
    return mounts_in_other_namespaces(
        {number: device for device in devices if (number := _device_number(device))}, proc)


def mounts_in_other_namespaces(devices_by_number: dict[str, str], proc: Path) -> list[ForeignMount]:
    if not devices_by_number:
        return []
    try:
        ours = os.readlink(proc / "self" / "ns" / "mnt")
    except OSError:
        return []
    found: dict[tuple[str, str], ForeignMount] = {}
    for pid in sorted(int(entry.name) for entry in proc.iterdir() if entry.name.isdigit()):
        try:
            namespace = os.readlink(proc / str(pid) / "ns" / "mnt")
        except OSError:  # the process ended, or we may not look
            continue
        mountinfo = _read(proc / str(pid) / "mountinfo") if namespace != ours else None
        for number, device in devices_by_number.items():
            points = _mounts_of(mountinfo, number) if mountinfo else []
            if points and (namespace, number) not in found:
                command = (_read(proc / str(pid) / "comm") or "?").strip()
                found[(namespace, number)] = ForeignMount(pid, command, points[0], device)
    return list(found.values())
