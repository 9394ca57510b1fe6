"""Facts about a block device, collected as plain data (what is on it, who uses it).

Collection reads the system through an injected `Host` (sysfs, /proc, stat) and runs
tools through an injected `run` (lsblk, wipefs or blkid, pvs). It only reads: no tool is
asked to change anything, and no device is opened for writing. Deciding what the facts
mean is blockrules.py's job. A probe that fails is recorded in `probe_errors`, never
raised, and a device with probe errors is refused (fail closed).

Host-wide facts (every device, mounts, swaps, md arrays, LVM PVs, the devices holding /
and /boot) are gathered once into `SystemFacts`, so listing every device costs one lsblk
and one pvs, plus one wipefs per device.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Callable

from backupbench import process
from backupbench.devices.probe_host import Host, PathInfo
from backupbench.devices.probe_parse import (
    LsblkDevice, MdArray, Signature, parse_blkid_export, parse_lsblk_json, parse_mdstat,
    parse_pvs_json, parse_swaps, parse_wipefs_json,
)
from backupbench.errors import BackupbenchError, ToolMissingError

__all__ = [
    "BlockFacts", "SystemFacts", "Host", "PathInfo", "Signature", "collect", "collect_system",
    "parse_blkid_export", "parse_lsblk_json", "parse_mdstat", "parse_pvs_json", "parse_swaps",
    "parse_wipefs_json",
]

Runner = Callable[..., process.Result]

LSBLK_COLUMNS = "NAME,KNAME,PATH,MAJ:MIN,TYPE,SIZE,RO,ROTA,FSTYPE,LABEL,UUID,PTTYPE,PKNAME,MOUNTPOINTS"
# Mount points whose disks are never a scratch disk.
SYSTEM_MOUNT_POINTS = ("/", "/boot", "/boot/efi")
RAID_MEMBER_SUFFIX = "_raid_member"   # linux_raid_member (md), isw_/ddf_/... (firmware RAID)
PROBE_TIMEOUT_S = 30.0
LVM_TIMEOUT_S = 120.0    # pvs scans every device; slow on hosts with many SAN paths
LVM_ENV = {"LVM_SUPPRESS_FD_WARNINGS": "1"}


@dataclass(frozen=True)
class SystemFacts:
    """What the whole machine says about block devices; gathered once, shared by devices."""

    devices: tuple[LsblkDevice, ...] = ()
    mounts: dict[str, tuple[str, ...]] = field(default_factory=dict)   # kname -> mount points
    swaps: tuple[str, ...] = ()                                        # knames of active swap
    md_arrays: tuple[MdArray, ...] = ()
    lvm_scanned: bool = False                                          # pvs ran
    physical_volumes: dict[str, str | None] = field(default_factory=dict)  # kname -> VG name
    # kname -> the system mount points (/, /boot) stored on it, directly or through layers.
    system_mounts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    errors: tuple[str, ...] = ()

    def device(self, kname: str) -> LsblkDevice | None:
        return next((d for d in self.devices if d.kname == kname), None)

    def md_array_of(self, kname: str) -> MdArray | None:
        return next((a for a in self.md_arrays if any(m.kname == kname for m in a.members)), None)


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


# --- the whole machine -------------------------------------------------------------------

def _tail(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else "no error output"


@dataclass(frozen=True)
class _Outcome:
    result: process.Result | None = None
    error: str | None = None       # why it could not run
    missing: bool = False          # the tool is not installed


def _run_tool(run: Runner, argv: list[str], timeout: float = PROBE_TIMEOUT_S, **kwargs) -> _Outcome:
    """Run a probe without raising: its result, or why it could not run."""
    try:
        return _Outcome(run(argv, timeout=timeout, check=False, **kwargs))
    except ToolMissingError as exc:
        return _Outcome(error=exc.message, missing=True)
    except BackupbenchError as exc:   # timeouts
        return _Outcome(error=exc.message)
    except OSError as exc:
        return _Outcome(error=f"{argv[0]}: {exc.strerror or exc}")


def kernel_name_of(path: str, host: Host) -> str | None:
    """The kernel name of the block device at `path` (/dev/mapper/vg0-lin -> dm-0)."""
    info = host.path_info(path)
    if info.is_block and info.major_minor:
        link = f"/sys/dev/block/{info.major_minor}"
        if host.exists(link):
            return os.path.basename(host.realpath(link))
    if info.exists and info.resolved.startswith("/dev/"):
        return os.path.basename(info.resolved)
    return None


def _sys(kname: str, attr: str = "") -> str:
    return f"/sys/class/block/{kname}" + (f"/{attr}" if attr else "")


def _is_partition(kname: str, host: Host) -> bool:
    return host.exists(_sys(kname, "partition"))


def _parent_disk(kname: str, host: Host) -> str | None:
    if not _is_partition(kname, host):
        return None
    return os.path.basename(os.path.dirname(host.realpath(_sys(kname))))


def _partitions(kname: str, host: Host) -> list[str]:
    return [e for e in host.listdir(_sys(kname)) if host.exists(_sys(kname, f"{e}/partition"))]


def _lower_layers(kname: str, host: Host) -> list[str]:
    """The device, the devices it is built on (slaves), and the disks of any partitions."""
    seen: list[str] = []
    todo = [kname]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        todo.extend(host.listdir(_sys(name, "slaves")))
        parent = _parent_disk(name, host)
        if parent:
            todo.append(parent)
    return seen


def _upper_layers(kname: str, host: Host) -> list[str]:
    """Everything built on the device: partitions, holders, their partitions and holders."""
    seen: list[str] = []
    todo = _partitions(kname, host) + host.listdir(_sys(kname, "holders"))
    while todo:
        name = todo.pop(0)
        if name in seen or name == kname:
            continue
        seen.append(name)
        todo.extend(_partitions(name, host) + host.listdir(_sys(name, "holders")))
    return seen


def collect_system(*, run: Runner = process.run, host: Host | None = None) -> SystemFacts:
    """Gather the host-wide facts: lsblk, mountinfo, /proc/swaps, /proc/mdstat, pvs."""
    host = host or Host()
    errors: list[str] = []

    devices: list[LsblkDevice] = []
    outcome = _run_tool(run, ["lsblk", "--json", "--bytes", "--output", LSBLK_COLUMNS])
    result = outcome.result
    if outcome.error:
        errors.append(f"lsblk could not run: {outcome.error}")
    elif result is not None and result.returncode != 0:
        errors.append(f"lsblk failed (exit {result.returncode}): {_tail(result.stderr)}")
    elif result is not None:
        try:
            devices = parse_lsblk_json(result.stdout)
        except ValueError as exc:
            errors.append(f"lsblk output unreadable: {exc}")

    mounts: dict[str, list[str]] = {}
    system: dict[str, list[str]] = {}
    try:
        mount_list = host.mounts()
    except OSError as exc:
        errors.append(f"cannot read /proc/self/mountinfo: {exc.strerror}")
        mount_list = []
    for mount in mount_list:
        link = f"/sys/dev/block/{mount.major_minor}"
        kname = os.path.basename(host.realpath(link)) if host.exists(link) else None
        if kname is None and mount.source.startswith("/dev/"):
            # btrfs and others show an anonymous device number; the source names the device.
            kname = kernel_name_of(mount.source, host)
        if kname is None:
            continue
        mounts.setdefault(kname, [])
        if mount.mount_point not in mounts[kname]:
            mounts[kname].append(mount.mount_point)
    for point in SYSTEM_MOUNT_POINTS:
        holding = [k for k, points in mounts.items() if point in points]
        for kname in holding:
            for layer in _lower_layers(kname, host):
                system.setdefault(layer, [])
                if point not in system[layer]:
                    system[layer].append(point)

    swaps: list[str] = []
    try:
        for swap in parse_swaps(host.read_text("/proc/swaps")):
            kname = kernel_name_of(swap.path, host) if swap.kind != "file" else None
            if kname:
                swaps.append(kname)
    except OSError as exc:
        errors.append(f"cannot read /proc/swaps: {exc.strerror}")

    md_arrays: list[MdArray] = []
    if host.exists("/proc/mdstat"):   # absent: the md driver is not loaded, so no arrays
        try:
            md_arrays = parse_mdstat(host.read_text("/proc/mdstat"))
        except (OSError, ValueError) as exc:
            errors.append(f"cannot read /proc/mdstat: {exc}")

    pvs: dict[str, str | None] = {}
    lvm_scanned = False
    # Without LVM tools, a PV still shows as its LVM2_member signature.
    outcome = _run_tool(run, ["pvs", "--reportformat", "json", "--units", "b", "--nosuffix",
                              "--options", "pv_name,vg_name,pv_size"], timeout=LVM_TIMEOUT_S, env=LVM_ENV)
    result = outcome.result
    if outcome.error and not outcome.missing:
        errors.append(f"pvs could not run: {outcome.error}")
    elif result is not None and result.returncode != 0:
        errors.append(f"pvs failed (exit {result.returncode}): {_tail(result.stderr)}")
    elif result is not None:
        try:
            for pv in parse_pvs_json(result.stdout):
                pvs[kernel_name_of(pv.pv_name, host) or os.path.basename(pv.pv_name)] = pv.vg_name
            lvm_scanned = True
        except ValueError as exc:
            errors.append(f"pvs output unreadable: {exc}")

    return SystemFacts(
        devices=tuple(devices), mounts={k: tuple(v) for k, v in mounts.items()}, swaps=tuple(swaps),
        md_arrays=tuple(md_arrays), lvm_scanned=lvm_scanned, physical_volumes=pvs,
        system_mounts={k: tuple(v) for k, v in system.items()}, errors=tuple(errors),
    )


# --- one device --------------------------------------------------------------------------

def _signatures(device: str, run: Runner) -> tuple[list[Signature], str | None]:
    """Every signature on the device: wipefs lists all; blkid (fallback) shows one at most."""
    wipefs = _run_tool(run, ["wipefs", "--no-act", "--json", device])
    result = wipefs.result
    if result is not None:
        if result.returncode != 0:
            return [], f"wipefs failed on {device} (exit {result.returncode}): {_tail(result.stderr)}"
        try:
            return parse_wipefs_json(result.stdout), None
        except ValueError as exc:
            return [], f"wipefs output for {device} unreadable: {exc}"
    if not wipefs.missing:
        return [], f"wipefs could not run on {device}: {wipefs.error}"
    blkid = _run_tool(run, ["blkid", "--probe", "--output", "export", device])
    result = blkid.result
    if result is None:
        return [], f"cannot look for signatures on {device}: {wipefs.error}; {blkid.error}"
    if result.returncode == 2:   # blkid: nothing found
        return [], None
    if result.returncode != 0:
        # 8: ambivalent (several signatures), which wipefs would list one by one.
        return [], f"blkid failed on {device} (exit {result.returncode}): {_tail(result.stderr)}"
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
            system: SystemFacts | None = None) -> BlockFacts:
    """Collect the facts about the device at `path` (read-only). Never raises for a bad
    device: a missing path, a file, or a failed probe are facts the rules refuse."""
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
    if kname is None or not host.exists(_sys(kname)):
        errors.append(f"{info.resolved} (device {info.major_minor}) is not in /sys/class/block")
        return BlockFacts(**base, kernel_name=kname, major_minor=info.major_minor, probe_errors=tuple(errors))

    listed = system.device(kname)
    sectors = _int_value(host.read_value(_sys(kname, "size")))
    if sectors is None:
        errors.append(f"cannot read the size of {kname} from sysfs")
    # lsblk hides detached loop devices (size 0); the size rule refuses those anyway.
    if listed is None and system.devices and sectors != 0:
        errors.append(f"lsblk does not list {kname}")
    ro = host.read_value(_sys(kname, "ro"))
    if ro is None:
        errors.append(f"cannot read whether {kname} is read-only from sysfs")
    rotational = host.read_value(_sys(kname, "queue/rotational"))
    parent = _parent_disk(kname, host)
    children = _upper_layers(kname, host)

    signatures, why = _signatures(info.resolved, run)
    if why:
        errors.append(why)
    content = next((s for s in signatures if not s.is_partition_table), None)

    pv_listed = kname in system.physical_volumes
    md = system.md_array_of(kname)
    md_text = f"{md.name} ({' '.join(x for x in (md.state, md.level) if x)})" if md else None
    mountpoints = list(system.mounts.get(kname, ()))
    for point in (listed.mountpoints if listed else ()):
        if point not in mountpoints:
            mountpoints.append(point)
    holds = list(system.system_mounts.get(kname, ()))
    for point in system.system_mounts.get(parent, ()) if parent else ():
        if point not in holds:
            holds.append(point)

    return BlockFacts(
        **base,
        kernel_name=kname, major_minor=info.major_minor,
        type=listed.type if listed else ("part" if parent else None),
        size_bytes=sectors * 512 if sectors is not None else None,   # sysfs counts 512-byte sectors
        read_only=(ro == "1") if ro is not None else None,
        rotational=(rotational == "1") if rotational is not None else None,
        parent=parent,
        partitions=tuple(_partitions(kname, host)),
        children=tuple(children),
        holders=tuple(host.listdir(_sys(kname, "holders"))),
        signatures=tuple(signatures),
        fs_type=content.type if content else None,
        label=content.label if content else None,
        uuid=content.uuid if content else None,
        mountpoints=tuple(mountpoints),
        child_mountpoints=tuple((child, point) for child in children for point in system.mounts.get(child, ())),
        is_swap=kname in system.swaps,
        child_swaps=tuple(child for child in children if child in system.swaps),
        lvm_pv=pv_listed or any(s.type == "LVM2_member" for s in signatures),
        lvm_vg=system.physical_volumes.get(kname),
        md_member=md is not None or any(s.type.endswith(RAID_MEMBER_SUFFIX) for s in signatures),
        md_array=md_text,
        holds_root_or_boot=tuple(holds),
        backing_file=host.read_value(_sys(kname, "loop/backing_file")) or None,
        probe_errors=tuple(errors),
    )
