"""Facts about block devices read from /sys (through a HostFiles), as plain values.

Names are kernel names as /proc/diskstats prints them ('vda', 'dm-0', 'md0', 'loop3',
'nvme0n1p1'); sysfs spells a '/' in a name as '!'.
"""

from __future__ import annotations

import os
import stat

from backupbench.errors import InputError
from backupbench.hostfiles import HostFiles


def _dir(name: str) -> str:
    return f"sys/class/block/{name.replace('/', '!')}"


def _name(entry: str) -> str:
    return entry.replace("!", "/")


def is_block_device(host: HostFiles, name: str) -> bool:
    return bool(name) and host.exists(_dir(name))


def is_partition(host: HostFiles, name: str) -> bool:
    return host.exists(f"{_dir(name)}/partition")


def parent_disk(host: HostFiles, name: str) -> str | None:
    """The whole disk a partition belongs to: sys/class/block/vda1 -> .../block/vda/vda1."""
    link = host.readlink(_dir(name))
    if not link:
        return None
    parts = [p for p in link.split("/") if p]
    return _name(parts[-2]) if len(parts) >= 2 and parts[-2] not in ("..", "block") else None


def slaves(host: HostFiles, name: str) -> list[str]:
    """Devices this one is built on (dm/md members, a dm's underlying device)."""
    return [_name(e) for e in host.listdir(f"{_dir(name)}/slaves")]


def holders(host: HostFiles, name: str) -> list[str]:
    """Devices built on this one."""
    return [_name(e) for e in host.listdir(f"{_dir(name)}/holders")]


def lvm_origin_real(host: HostFiles, name: str) -> bool:
    """Whether `name` is the `-real` device LVM puts under an LV once it has a classic snapshot:
    the origin and every snapshot are its holders.

    LVM's dm uuid (`LVM-<vg uuid><lv uuid>-real`) says so for certain; a device-mapper device
    made without LVM may be named anything. Only a tree without dm/uuid falls back on the name,
    where LVM doubles an LV's own hyphens: an odd run of them before `real` is LVM's suffix."""
    uuid = host.read_value(f"{_dir(name)}/dm/uuid")
    if uuid is not None:
        return uuid.startswith("LVM-") and uuid.endswith("-real")
    dm_name = host.read_value(f"{_dir(name)}/dm/name") or ""
    if not dm_name.endswith("-real"):
        return False
    stem = dm_name[: -len("real")]
    return (len(stem) - len(stem.rstrip("-"))) % 2 == 1


def btrfs_devices(host: HostFiles, name: str) -> list[str]:
    """Every device of the mounted btrfs that `name` is one of; [] when it is in none.

    A btrfs on several devices is mounted from one of them, and the mount table names only
    that one; the kernel lists them all as links in /sys/fs/btrfs/<fsid>/devices/."""
    for fsid in host.listdir("sys/fs/btrfs"):
        members = [_name(e) for e in host.listdir(f"sys/fs/btrfs/{fsid}/devices")]
        if name in members:
            return members
    return []


def loop_backing_file(host: HostFiles, name: str) -> str | None:
    """The file behind an attached loop device; None for an unattached one or a non-loop."""
    return host.read_value(f"{_dir(name)}/loop/backing_file") or None


def loop_direct_io(host: HostFiles, name: str) -> bool | None:
    """Whether a loop device reads and writes its backing file with direct I/O (losetup
    --direct-io=on): without it the file's pages are cached by the host; None when unknown."""
    value = host.read_value(f"{_dir(name)}/loop/dio")
    return None if value is None else value.strip() == "1"


def label(host: HostFiles, name: str) -> str | None:
    """A human name: the dm name ('vg0-lin'), the md level ('raid0'), a loop's file."""
    return (host.read_value(f"{_dir(name)}/dm/name")
            or host.read_value(f"{_dir(name)}/md/level")
            or loop_backing_file(host, name))


def name_for_devnum(host: HostFiles, major: int, minor: int) -> str | None:
    """sys/dev/block/MAJ:MIN -> kernel name; None if no block device has that number."""
    link = host.readlink(f"sys/dev/block/{major}:{minor}")
    return _name(os.path.basename(link.rstrip("/"))) if link else None


def default_devices(host: HostFiles, names: list[str]) -> list[str]:
    """What 'all block devices' means: what iostat shows by default (whole devices, no
    partitions), less ram* and loop devices with no backing file."""
    chosen = []
    for name in names:
        if name.startswith("ram"):
            continue
        if name.startswith("loop") and loop_backing_file(host, name) is None:
            continue
        if is_partition(host, name):
            continue
        chosen.append(name)
    return chosen


def resolve_device_name(arg: str, host: HostFiles | None = None) -> str:
    """'vda', '/dev/vda', '/dev/mapper/vg0-lin' or '/dev/vg0/lin' -> kernel name ('dm-0').

    Raises InputError naming the fix when no such block device exists."""
    host = host or HostFiles()
    text = arg.strip()
    if "/" in text and text.startswith(("/", ".")):
        try:
            st = os.stat(text)
        except OSError:
            st = None
        if st is not None and stat.S_ISBLK(st.st_mode):
            name = name_for_devnum(host, os.major(st.st_rdev), os.minor(st.st_rdev))
            if name:
                return name
        candidate = os.path.basename(os.path.realpath(text))
    else:
        candidate = text
    if candidate and is_block_device(host, candidate):
        return candidate
    raise InputError(f"no block device named {arg!r}",
                     "use a kernel name such as vda, dm-0, md0 or loop3, or a /dev path (see lsblk)")
