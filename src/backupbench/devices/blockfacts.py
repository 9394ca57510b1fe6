"""Facts about a block device, collected as plain data (what is on it, who uses it).

Collection reads the system through an injected `Host` (sysfs, /proc, stat) and runs
tools through an injected `run` (lsblk, wipefs or blkid, pvs). It only reads: no tool is
asked to change anything, and no device is opened for writing. Deciding what the facts
mean is blockrules.py's job. A probe that fails is recorded in `probe_errors`, never
raised, and a device with probe errors is refused (fail closed).

Host-wide facts (every device, mounts, swaps, md arrays, LVM PVs, the devices holding /
and /boot) are gathered once into `SystemFacts` (systemfacts.py) and shared by devices.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Iterable, Mapping

from backupbench import process
from backupbench.devices.probe_host import Host
from backupbench.devices.probe_parse import (Signature, parse_blkid_export, parse_wipefs_json,
                                            parse_wipefs_json_by_device)
from backupbench.devices.systemfacts import (Runner, SystemFacts, collect_system, kernel_name_of, last_line,
                                             parent_disk, partitions_of, run_tool, sys_path, upper_layers)

RAID_MEMBER_SUFFIX = "_raid_member"   # linux_raid_member (md), isw_/ddf_/... (firmware RAID)


@dataclass(frozen=True)
class BlockFacts:
    """Everything the rules need to decide whether a device may be written; plain data."""

    path: str                                   # as the user gave it
    resolved: str                               # every symlink followed
    is_symlink: bool
    exists: bool
    is_block: bool
    file_kind: str                              # "block device", "regular file", "missing", ...
    kernel_name: str | None = None              # "vdh", "dm-3", "loop7"
    major_minor: str | None = None
    type: str | None = None                     # lsblk TYPE: disk, part, loop, lvm, raid6, crypt, rom
    size_bytes: int | None = None
    read_only: bool | None = None
    rotational: bool | None = None
    parent: str | None = None                   # the disk of a partition
    partitions: tuple[str, ...] = ()
    children: tuple[str, ...] = ()              # partitions and holders, all the way up
    holders: tuple[str, ...] = ()               # /sys/class/block/X/holders (dm, md, bcache)
    signatures: tuple[Signature, ...] = ()      # every signature wipefs found, partition tables too
    fs_type: str | None = None                  # first non-partition-table signature, as lsblk FSTYPE
    label: str | None = None
    uuid: str | None = None
    mountpoints: tuple[str, ...] = ()           # where this device is mounted
    child_mountpoints: tuple[tuple[str, str], ...] = ()   # (child kname, mount point)
    is_swap: bool = False                       # in /proc/swaps
    child_swaps: tuple[str, ...] = ()           # children in /proc/swaps
    lvm_pv: bool = False
    lvm_vg: str | None = None
    md_member: bool = False
    md_array: str | None = None                 # "md0 (active raid6)"
    holds_root_or_boot: tuple[str, ...] = ()    # which of /, /boot live on it (or on its disk)
    backing_file: str | None = None             # a loop device's file
    probe_errors: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def display_name(self) -> str:
        """The path, with the target when it is a symlink: '/tmp/x -> /dev/loop3'."""
        return f"{self.path} -> {self.resolved}" if self.is_symlink else self.path


# A device's signatures, or why they could not be read.
Probed = tuple[list[Signature], str | None]


def probe_signatures(paths: Iterable[str], run: Runner = process.run, host: Host | None = None) -> dict[str, Probed]:
    """The signatures on each block device among `paths`, by its resolved path, from one
    wipefs run for all of them: on a slow host every program started costs (about 0.4 s in
    the lab's emulated guest). Empty (collect() then probes each device on its own, which
    also says which one failed) for fewer than two devices, two of one name (wipefs names
    a device by its path's last part), or a run that fails (a device gone or unreadable,
    wipefs missing: blkid is then asked device by device) or answers for a device not asked."""
    host = host or Host()
    devices = list(dict.fromkeys(info.resolved for info in map(host.path_info, paths)
                                 if info.is_block and not info.error))
    names = [os.path.basename(device) for device in devices]
    if len(devices) < 2 or len(set(names)) < len(names):
        return {}
    result = run_tool(run, ["wipefs", "--no-act", "--json", *devices]).result
    if result is None or result.returncode != 0:
        return {}
    try:
        found = parse_wipefs_json_by_device(result.stdout)
    except ValueError:
        return {}
    if not set(found) <= set(names):
        return {}
    return {device: (found.get(name, []), None) for device, name in zip(devices, names)}


def _signatures(device: str, run: Runner) -> Probed:
    """Every signature on the device: wipefs lists all; blkid (fallback) shows one at most."""
    wipefs = run_tool(run, ["wipefs", "--no-act", "--json", device])
    result = wipefs.result
    if result is not None:
        if result.returncode != 0:
            return [], f"wipefs failed on {device} (exit {result.returncode}): {last_line(result.stderr)}"
        try:
            return parse_wipefs_json(result.stdout), None
        except ValueError as exc:
            return [], f"wipefs output for {device} unreadable: {exc}"
    if not wipefs.missing:
        return [], f"wipefs could not run on {device}: {wipefs.error}"
    blkid = run_tool(run, ["blkid", "--probe", "--output", "export", device])
    result = blkid.result
    if result is None:
        return [], f"cannot look for signatures on {device}: {wipefs.error}; {blkid.error}"
    if result.returncode == 2:   # blkid: nothing found
        return [], None
    if result.returncode != 0:
        # 8: ambivalent (several signatures), which wipefs would list one by one.
        return [], f"blkid failed on {device} (exit {result.returncode}): {last_line(result.stderr)}"
    try:
        return parse_blkid_export(result.stdout), None
    except ValueError as exc:
        return [], f"blkid output for {device} unreadable: {exc}"


def _int_value(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def collect(path: str | os.PathLike[str], *, run: Runner = process.run, host: Host | None = None,
            system: SystemFacts | None = None, signatures: Mapping[str, Probed] | None = None) -> BlockFacts:
    """Collect the facts about the device at `path` (read-only). Never raises for a bad
    device: a missing path, a file, or a failed probe are facts the rules refuse.
    `system` and `signatures` (probe_signatures, by resolved path): collected by the caller
    for several devices at once, just before this call (never older facts: what is collected
    is the device as it is now); what they lack is collected here."""
    host = host or Host()
    path = os.fspath(path)
    info = host.path_info(path)
    base = dict(path=path, resolved=info.resolved, is_symlink=info.is_symlink, exists=info.exists,
                is_block=info.is_block, file_kind=info.kind)
    if info.error:
        return BlockFacts(**base, probe_errors=(info.error,))
    if not info.exists or not info.is_block:
        return BlockFacts(**base)

    if system is None:
        system = collect_system(run=run, host=host)
    errors = list(system.errors)
    kname = kernel_name_of(path, host)
    if kname is None or not host.exists(sys_path(kname)):
        errors.append(f"{info.resolved} (device {info.major_minor}) is not in /sys/class/block")
        return BlockFacts(**base, kernel_name=kname, major_minor=info.major_minor, probe_errors=tuple(errors))

    sysfs = _sysfs_facts(kname, host, system, errors)
    probed = (signatures or {}).get(info.resolved)
    found, why = probed if probed is not None else _signatures(info.resolved, run)
    if why:
        errors.append(why)
    return BlockFacts(**base, kernel_name=kname, major_minor=info.major_minor, **sysfs,
                      **_content_facts(found), **_use_facts(kname, sysfs, found, system),
                      probe_errors=tuple(errors))


def _sysfs_facts(kname: str, host: Host, system: SystemFacts, errors: list[str]) -> dict:
    """What sysfs and lsblk say of the device itself: size, type, read-only, its layers."""
    listed = system.device(kname)
    sectors = _int_value(host.read_value(sys_path(kname, "size")))
    if sectors is None:
        errors.append(f"cannot read the size of {kname} from sysfs")
    # lsblk hides detached loop devices (size 0); the size rule refuses those anyway.
    if listed is None and system.devices and sectors != 0:
        errors.append(f"lsblk does not list {kname}")
    ro = host.read_value(sys_path(kname, "ro"))
    if ro is None:
        errors.append(f"cannot read whether {kname} is read-only from sysfs")
    rotational = host.read_value(sys_path(kname, "queue/rotational"))
    parent = parent_disk(kname, host)
    mountpoints = list(system.mounts.get(kname, ()))
    mountpoints += [p for p in (listed.mountpoints if listed else ()) if p not in mountpoints]
    return dict(
        type=listed.type if listed else ("part" if parent else None),
        size_bytes=sectors * 512 if sectors is not None else None,   # sysfs counts 512-byte sectors
        read_only=(ro == "1") if ro is not None else None,
        rotational=(rotational == "1") if rotational is not None else None,
        parent=parent,
        partitions=tuple(partitions_of(kname, host)),
        children=tuple(upper_layers(kname, host)),
        holders=tuple(host.listdir(sys_path(kname, "holders"))),
        mountpoints=tuple(mountpoints),
        backing_file=host.read_value(sys_path(kname, "loop/backing_file")) or None,
    )


def _content_facts(signatures: list[Signature]) -> dict:
    content = next((s for s in signatures if not s.is_partition_table), None)
    return dict(signatures=tuple(signatures), fs_type=content.type if content else None,
                label=content.label if content else None, uuid=content.uuid if content else None)


def _use_facts(kname: str, sysfs: dict, signatures: list[Signature], system: SystemFacts) -> dict:
    """Who uses the device: mounts above it, swap, LVM, md, the system's own mount points."""
    children, parent = sysfs["children"], sysfs["parent"]
    md = system.md_array_of(kname)
    holds = list(system.system_mounts.get(kname, ()))
    holds += [p for p in (system.system_mounts.get(parent, ()) if parent else ()) if p not in holds]
    return dict(
        child_mountpoints=tuple((child, point) for child in children for point in system.mounts.get(child, ())),
        is_swap=kname in system.swaps,
        child_swaps=tuple(child for child in children if child in system.swaps),
        lvm_pv=kname in system.physical_volumes or any(s.type == "LVM2_member" for s in signatures),
        lvm_vg=system.physical_volumes.get(kname),
        md_member=md is not None or any(s.type.endswith(RAID_MEMBER_SUFFIX) for s in signatures),
        md_array=f"{md.name} ({' '.join(x for x in (md.state, md.level) if x)})" if md else None,
        holds_root_or_boot=tuple(holds),
    )
