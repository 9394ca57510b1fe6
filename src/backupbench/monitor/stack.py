"""The block devices under the filesystem that holds a path: top device -> layers -> member disks.

The mount comes from /proc/self/mountinfo (longest mount point that holds the path; its
major:minor names the device through /sys/dev/block), then /sys/class/block/*/slaves is
followed down. A partition stands on its whole disk (iostat shows both, so both are
sampled); a loop device is a member whose backing file is reported (the file's own
filesystem is not followed). A ZFS dataset has no block device of its own and its disks
hold nothing in sysfs: its pool's leaf vdevs come from `zpool list -vHP` (see monitor.zfs),
and the stack is those partitions and their disks, with no top. Paths on tmpfs, overlay,
NFS and the like give an empty stack with a reason, never an exception.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

from backupbench.errors import BackupbenchError, InputError
from backupbench.monitor import sysfs, zfs
from backupbench.hostfiles import HostFiles, MountEntry, find_mount


@dataclass(frozen=True)
class DeviceStack:
    path: str
    top: str | None = None                                   # device the filesystem is on, e.g. 'dm-0'
    layers: tuple[str, ...] = ()                             # in between: dm/md below the top, partitions
    members: tuple[str, ...] = ()                            # disks at the bottom, e.g. ('vda',)
    slaves: dict[str, tuple[str, ...]] = field(default_factory=dict)   # device -> what it stands on
    backing_files: dict[str, str] = field(default_factory=dict)        # loop device -> its file
    labels: dict[str, str] = field(default_factory=dict)               # 'dm-0' -> 'vg0-lin', 'md0' -> 'raid0'
    mount_point: str | None = None
    fs_type: str | None = None
    source: str | None = None
    reason: str | None = None                                # why the stack is empty
    pool: str | None = None                                  # the ZFS pool the path is on
    parts: tuple["DeviceStack", ...] = ()                    # the stacks a combined one joins

    @property
    def all_names(self) -> list[str]:
        """Every device to sample: top, layers, members, without repeats."""
        names: list[str] = []
        for name in (self.top, *self.layers, *self.members):
            if name and name not in names:
                names.append(name)
        return names

    @property
    def empty(self) -> bool:
        return self.top is None and not self.members

    def describe(self) -> str:
        """One line, e.g. '/mnt/lin: xfs on dm-0 (vg0-lin) via dm-7; members vda'."""
        if self.parts:
            return " | ".join(part.describe() for part in self.parts)
        where = f"{self.mount_point}: {self.fs_type}" if self.mount_point else self.path
        if self.empty:
            return f"{where}: no block device ({self.reason})"

        def named(n: str) -> str:
            return f"{n} ({self.labels[n]})" if n in self.labels else n

        text = f"{where} on {named(self.top) if self.top else 'pool ' + str(self.pool)}"
        if self.layers:
            text += " via " + ", ".join(named(n) for n in self.layers)
        if self.members != (self.top,):
            text += "; members " + ", ".join(named(n) for n in self.members)
        return text


def _device_of_mount(mount: MountEntry, host: HostFiles) -> str | None:
    if mount.major != 0:
        name = sysfs.name_for_devnum(host, mount.major, mount.minor)
        if name:
            return name
    if mount.source.startswith("/dev/"):   # btrfs shows an anonymous 0:N; its source names the disk
        try:
            return sysfs.resolve_device_name(mount.source, host)
        except InputError:   # an unresolvable source just means "no block device"
            return None
    return None


def walk_stack(top: str, host: HostFiles) -> tuple[list[str], list[str], dict[str, tuple[str, ...]]]:
    """(layers, members, slaves) below `top`, depth first."""
    layers: list[str] = []
    members: list[str] = []
    edges: dict[str, tuple[str, ...]] = {}
    seen: set[str] = set()

    def visit(name: str, depth: int) -> None:
        if name in seen:
            return
        seen.add(name)
        below = sysfs.slaves(host, name)
        if not below and sysfs.is_partition(host, name):
            parent = sysfs.parent_disk(host, name)
            below = [parent] if parent else []
        if not below:
            members.append(name)
            return
        edges[name] = tuple(below)
        if depth > 0:
            layers.append(name)
        for child in below:
            visit(child, depth + 1)

    visit(top, 0)
    return layers, members, edges


def _pool_stack(real: str, pool: str, where: dict, host: HostFiles,
                pool_vdevs: Callable[[str], list[str]]) -> DeviceStack:
    try:
        paths = pool_vdevs(pool)
    except BackupbenchError as exc:
        return DeviceStack(real, **where, pool=pool, reason=f"cannot list the vdevs of pool {pool}: {exc.message}")
    layers: list[str] = []
    members: list[str] = []
    edges: dict[str, tuple[str, ...]] = {}
    for path in paths:
        try:
            name = sysfs.resolve_device_name(path, host)
        except InputError:
            continue
        below_layers, below_members, below_edges = walk_stack(name, host)
        if below_members != [name]:
            layers.append(name)
        layers += [n for n in below_layers if n not in layers]
        members += [n for n in below_members if n not in members]
        edges.update(below_edges)
    if not members:
        return DeviceStack(real, **where, pool=pool, reason=f"pool {pool} has no vdev this machine shows as a block device")
    labels = {name: pool for name in layers or members}
    return DeviceStack(real, None, tuple(layers), tuple(members), edges, {}, labels, **where, pool=pool)


def device_stack(path: str | os.PathLike[str], host: HostFiles | None = None,
                 pool_vdevs: Callable[[str], list[str]] = zfs.pool_vdevs) -> DeviceStack:
    """The block devices under the filesystem holding `path` (a file or directory; it
    need not exist yet: its nearest mount is used). Never raises for an odd path."""
    host = host or HostFiles()
    real = os.path.realpath(os.path.abspath(os.fspath(path)))
    try:
        entries = host.mounts()
    except OSError as exc:
        return DeviceStack(real, reason=f"cannot read the mount table: {exc}")
    mount = find_mount(real, entries)
    if mount is None:
        return DeviceStack(real, reason="no mounted filesystem holds this path")
    where = dict(mount_point=mount.mount_point, fs_type=mount.fs_type, source=mount.source)
    pool = zfs.pool_of(mount.fs_type, mount.source)
    if pool is not None:
        return _pool_stack(real, pool, where, host, pool_vdevs)
    top = _device_of_mount(mount, host)
    if top is None:
        return DeviceStack(real, **where, reason=f"{mount.fs_type} from {mount.source!r} is not on a block device")
    layers, members, edges = walk_stack(top, host)
    nodes = [top, *layers, *members]
    labels = {n: lab for n in nodes if (lab := sysfs.label(host, n))}
    backing = {n: f for n in nodes if n.startswith("loop") and (f := sysfs.loop_backing_file(host, n))}
    return DeviceStack(real, top, tuple(layers), tuple(members), edges, backing, labels, **where)


def combined(stacks: list[DeviceStack]) -> DeviceStack:
    """One stack over several paths (the drives of an erasure-coded MinIO): their devices
    together, each once; what the paths stand on becomes a layer."""
    if len(stacks) == 1:
        return stacks[0]
    layers: list[str] = []
    members: list[str] = []
    for stack in stacks:
        layers += [n for n in (stack.top, *stack.layers) if n and n not in layers]
        members += [n for n in stack.members if n not in members]
    layers = [n for n in layers if n not in members]
    slaves: dict[str, tuple[str, ...]] = {}
    labels: dict[str, str] = {}
    backing: dict[str, str] = {}
    for stack in stacks:
        slaves.update(stack.slaves)
        labels.update(stack.labels)
        backing.update(stack.backing_files)
    pools = {stack.pool for stack in stacks if stack.pool}
    reasons = [stack.reason for stack in stacks if stack.reason]
    return DeviceStack(", ".join(stack.path for stack in stacks), None, tuple(layers), tuple(members), slaves,
                       backing, labels, reason="; ".join(reasons) if reasons and not members else None,
                       pool=pools.pop() if len(pools) == 1 else None, parts=tuple(stacks))
