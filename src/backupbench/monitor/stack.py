"""The block devices under the filesystem that holds a path: top device -> layers -> member disks.

The mount comes from /proc/self/mountinfo (longest mount point that holds the path; its
major:minor names the device through /sys/dev/block), then /sys/class/block/*/slaves is
followed down. A partition stands on its whole disk (iostat shows both, so both are
sampled); a loop device is a member whose backing file is reported (the file's own
filesystem is not followed). An LVM origin with classic snapshots stands on its `-real`
device alone, yet each write to it is also copied into every snapshot's COW device, which is
no slave of it: below the `-real` the stack goes up to the snapshots (its holders) and down
their COW devices. Holders are followed there only: elsewhere they are what else stands on a
device (the other LVs of a PV, a dm-crypt's other users), which the path's writes never
reach. A btrfs on several devices is mounted from one of them and the mount table names only
that one: its devices come from /sys/fs/btrfs/<fsid>/devices/, and the stack is each of them
followed down, with no top (`spans` names them). A ZFS dataset has no block device of its own
and its disks hold nothing in sysfs: its pool's leaf vdevs come from `zpool list -vHP` (see
monitor.zfs), and the stack is those partitions and their disks, with no top. Paths on tmpfs,
overlay, NFS and the like give an empty stack with a reason, never an exception.
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
    spans: tuple[str, ...] = ()                              # a filesystem's devices when it has several (btrfs)

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

        on = named(self.top) if self.top else ", ".join(map(named, self.spans)) or f"pool {self.pool}"
        text = f"{where} on {on}"
        between = [n for n in self.layers if n not in self.spans]
        if between:
            text += " via " + ", ".join(named(n) for n in between)
        if self.members != (self.top,) and self.members != self.spans:
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
    """(layers, members, slaves) below `top`, depth first; below an LVM origin with classic
    snapshots, its snapshots and their COW devices are layers too, their disks members."""
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
        if len(below) == 1 and sysfs.lvm_origin_real(host, below[0]):
            # An origin's first writes copy the old blocks into each snapshot's COW, which is
            # below the snapshots (the -real's other holders), not below the origin. A mounted
            # snapshot stands on the -real and its own COW, so it skips this: its writes reach
            # no other snapshot's COW.
            for snapshot in sysfs.holders(host, below[0]):
                visit(snapshot, depth + 1)

    visit(top, 0)
    return layers, members, edges


def walk_stacks(names: list[str], host: HostFiles) -> tuple[list[str], list[str], dict[str, tuple[str, ...]]]:
    """(layers, members, slaves) below several devices that together hold one filesystem (a
    pool's vdevs, a btrfs's devices): each device on something else is a layer; none twice."""
    layers: list[str] = []
    members: list[str] = []
    edges: dict[str, tuple[str, ...]] = {}
    for name in names:
        below_layers, below_members, below_edges = walk_stack(name, host)
        if below_members != [name] and name not in layers:
            layers.append(name)
        layers += [n for n in below_layers if n not in layers]
        members += [n for n in below_members if n not in members]
        edges.update(below_edges)
    return layers, members, edges


def _pool_stack(real: str, pool: str, where: dict, host: HostFiles,
                pool_vdevs: Callable[[str], list[str]]) -> DeviceStack:
    try:
        paths = pool_vdevs(pool)
    except BackupbenchError as exc:
        return DeviceStack(real, **where, pool=pool, reason=f"cannot list the vdevs of pool {pool}: {exc.message}")
    names: list[str] = []
    for path in paths:
        try:
            names.append(sysfs.resolve_device_name(path, host))
        except InputError:
            continue
    layers, members, edges = walk_stacks(names, host)
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
    spans = _btrfs_spans(top, host) if mount.fs_type == "btrfs" else ()
    layers, members, edges = walk_stacks(list(spans), host) if spans else walk_stack(top, host)
    nodes = [top, *layers, *members]
    labels = {n: lab for n in nodes if (lab := sysfs.label(host, n))}
    backing = {n: f for n in nodes if n.startswith("loop") and (f := sysfs.loop_backing_file(host, n))}
    return DeviceStack(real, None if spans else top, tuple(layers), tuple(members), edges, backing, labels,
                       **where, spans=spans)


def _btrfs_spans(device: str, host: HostFiles) -> tuple[str, ...]:
    """A btrfs's devices when it has more than one, the one its mount names first; () else."""
    others = [name for name in sysfs.btrfs_devices(host, device) if name != device]
    return (device, *others) if others else ()


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
