"""What the whole machine says about its block devices, gathered once: lsblk, the mount
table, swaps, md arrays, LVM physical volumes, and the sysfs tree between devices.

Listing every device then costs one lsblk and one pvs (blockfacts.py adds one wipefs for all
the devices, or one per device when that run fails). Probes never raise: what could not be
read is recorded in `errors`, and a device whose facts carry errors is refused (fail closed).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

from backupbench import process
from backupbench.devices.probe_host import Host
from backupbench.devices.probe_parse import LsblkDevice, MdArray, parse_lsblk_json, parse_mdstat, parse_pvs_json, parse_swaps
from backupbench.errors import BackupbenchError, ToolMissingError

Runner = Callable[..., process.Result]

LSBLK_COLUMNS = "NAME,KNAME,PATH,MAJ:MIN,TYPE,SIZE,RO,ROTA,FSTYPE,LABEL,UUID,PTTYPE,PKNAME,MOUNTPOINTS"
# Mount points whose disks are never a scratch disk.
SYSTEM_MOUNT_POINTS = ("/", "/boot", "/boot/efi")
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


def last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else "no error output"


@dataclass(frozen=True)
class ToolOutcome:
    result: process.Result | None = None
    error: str | None = None       # why it could not run
    missing: bool = False          # the tool is not installed


def run_tool(run: Runner, argv: list[str], timeout: float = PROBE_TIMEOUT_S, **kwargs) -> ToolOutcome:
    """Run a probe without raising: its result, or why it could not run."""
    try:
        return ToolOutcome(run(argv, timeout=timeout, check=False, **kwargs))
    except ToolMissingError as exc:
        return ToolOutcome(error=exc.message, missing=True)
    except BackupbenchError as exc:   # timeouts
        return ToolOutcome(error=exc.message)
    except OSError as exc:
        return ToolOutcome(error=f"{argv[0]}: {exc.strerror or exc}")


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


def sys_path(kname: str, attr: str = "") -> str:
    return f"/sys/class/block/{kname}" + (f"/{attr}" if attr else "")


def _is_partition(kname: str, host: Host) -> bool:
    return host.exists(sys_path(kname, "partition"))


def parent_disk(kname: str, host: Host) -> str | None:
    if not _is_partition(kname, host):
        return None
    return os.path.basename(os.path.dirname(host.realpath(sys_path(kname))))


def partitions_of(kname: str, host: Host) -> list[str]:
    return [e for e in host.listdir(sys_path(kname)) if host.exists(sys_path(kname, f"{e}/partition"))]


def _lower_layers(kname: str, host: Host) -> list[str]:
    """The device, the devices it is built on (slaves), and the disks of any partitions."""
    seen: list[str] = []
    todo = [kname]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        todo.extend(host.listdir(sys_path(name, "slaves")))
        parent = parent_disk(name, host)
        if parent:
            todo.append(parent)
    return seen


def upper_layers(kname: str, host: Host) -> list[str]:
    """Everything built on the device: partitions, holders, their partitions and holders."""
    seen: list[str] = []
    todo = partitions_of(kname, host) + host.listdir(sys_path(kname, "holders"))
    while todo:
        name = todo.pop(0)
        if name in seen or name == kname:
            continue
        seen.append(name)
        todo.extend(partitions_of(name, host) + host.listdir(sys_path(name, "holders")))
    return seen


def _tool_output(outcome: ToolOutcome, tool: str, errors: list[str], missing_ok: bool = False) -> str | None:
    """The tool's stdout, or None with what went wrong added to `errors`."""
    result = outcome.result
    if outcome.error:
        if not (missing_ok and outcome.missing):
            errors.append(f"{tool} could not run: {outcome.error}")
        return None
    if result is not None and result.returncode != 0:
        errors.append(f"{tool} failed (exit {result.returncode}): {last_line(result.stderr)}")
        return None
    return result.stdout if result is not None else None


def _lsblk(run: Runner, errors: list[str]) -> list[LsblkDevice]:
    text = _tool_output(run_tool(run, ["lsblk", "--json", "--bytes", "--output", LSBLK_COLUMNS]), "lsblk", errors)
    if text is None:
        return []
    try:
        return parse_lsblk_json(text)
    except ValueError as exc:
        errors.append(f"lsblk output unreadable: {exc}")
        return []


def _mounts(host: Host, errors: list[str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(kname -> its mount points, kname -> the system mount points stored on it or above it)."""
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
        if kname is not None and mount.mount_point not in mounts.setdefault(kname, []):
            mounts[kname].append(mount.mount_point)
    for point in SYSTEM_MOUNT_POINTS:
        for kname in [k for k, points in mounts.items() if point in points]:
            for layer in _lower_layers(kname, host):
                if point not in system.setdefault(layer, []):
                    system[layer].append(point)
    return mounts, system


def _swaps(host: Host, errors: list[str]) -> list[str]:
    swaps: list[str] = []
    try:
        for swap in parse_swaps(host.read_text("/proc/swaps")):
            kname = kernel_name_of(swap.path, host) if swap.kind != "file" else None
            if kname:
                swaps.append(kname)
    except OSError as exc:
        errors.append(f"cannot read /proc/swaps: {exc.strerror}")
    return swaps


def _md_arrays(host: Host, errors: list[str]) -> list[MdArray]:
    if not host.exists("/proc/mdstat"):  # absent: the md driver is not loaded, so no arrays
        return []
    try:
        return parse_mdstat(host.read_text("/proc/mdstat"))
    except (OSError, ValueError) as exc:
        errors.append(f"cannot read /proc/mdstat: {exc}")
        return []


def _physical_volumes(run: Runner, host: Host, errors: list[str]) -> dict[str, str | None] | None:
    """kname -> VG name of every LVM PV; None when pvs could not tell (not installed: a PV
    still shows as its LVM2_member signature)."""
    outcome = run_tool(run, ["pvs", "--reportformat", "json", "--units", "b", "--nosuffix",
                              "--options", "pv_name,vg_name,pv_size"], timeout=LVM_TIMEOUT_S, env=LVM_ENV)
    text = _tool_output(outcome, "pvs", errors, missing_ok=True)
    if text is None:
        return None
    try:
        return {kernel_name_of(pv.pv_name, host) or os.path.basename(pv.pv_name): pv.vg_name
                for pv in parse_pvs_json(text)}
    except ValueError as exc:
        errors.append(f"pvs output unreadable: {exc}")
        return None


def collect_system(*, run: Runner = process.run, host: Host | None = None) -> SystemFacts:
    """Gather the host-wide facts: lsblk, mountinfo, /proc/swaps, /proc/mdstat, pvs."""
    host = host or Host()
    errors: list[str] = []
    devices = _lsblk(run, errors)
    mounts, system = _mounts(host, errors)
    swaps = _swaps(host, errors)
    md_arrays = _md_arrays(host, errors)
    pvs = _physical_volumes(run, host, errors)
    return SystemFacts(
        devices=tuple(devices), mounts={k: tuple(v) for k, v in mounts.items()}, swaps=tuple(swaps),
        md_arrays=tuple(md_arrays), lvm_scanned=pvs is not None, physical_volumes=pvs or {},
        system_mounts={k: tuple(v) for k, v in system.items()}, errors=tuple(errors),
    )
