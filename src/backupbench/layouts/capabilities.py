"""What this kernel and these tools offer, collected once; missing() is pure."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from backupbench.layouts.actions import Requirement

# kernel feature -> (/proc/misc or /proc/filesystems evidence, module names that provide it)
_MODULES = {
    "dm": ("dm_mod", "dm-mod"),
    "dm-thin-pool": ("dm_thin_pool", "dm-thin-pool"),
    "dm-snapshot": ("dm_snapshot", "dm-snapshot"),
    "md": ("md_mod", "md-mod"),
    "raid456": ("raid456",),
    "zfs": ("zfs",),
    "fs:xfs": ("xfs",),
    "fs:ext4": ("ext4",),
    "fs:btrfs": ("btrfs",),
}


@dataclass(frozen=True)
class HostCapabilities:
    kernel: frozenset[str]
    tools: frozenset[str]


def _module_files(modules_dir: Path) -> set[str]:
    names: set[str] = set()
    if modules_dir.is_dir():
        for _, _, files in os.walk(modules_dir):
            for file in files:
                if ".ko" in file:
                    names.add(file.split(".ko")[0].replace("-", "_"))
    return names


def collect(proc: Path = Path("/proc"), sys_root: Path = Path("/sys"), modules_root: Path = Path("/lib/modules"),
            which=shutil.which, tools: tuple[str, ...] = ()) -> HostCapabilities:
    def read(path: Path) -> str:
        try:
            return path.read_text()
        except OSError:
            return ""

    misc, filesystems = read(proc / "misc"), read(proc / "filesystems")
    loaded = {p.name for p in (sys_root / "module").iterdir()} if (sys_root / "module").is_dir() else set()
    available = loaded | _module_files(modules_root / os.uname().release)
    kernel = set()
    for feature, modules in _MODULES.items():
        if any(m.replace("-", "_") in available for m in modules):
            kernel.add(feature)
    if "device-mapper" in misc:
        kernel.add("dm")
    if (proc / "mdstat").exists():
        kernel.add("md")
    for fs in ("xfs", "ext4", "btrfs"):
        if any(line.split()[-1] == fs for line in filesystems.splitlines() if line.split()):
            kernel.add(f"fs:{fs}")
    return HostCapabilities(frozenset(kernel), frozenset(t for t in tools if which(t)))


def missing(requirements: tuple[Requirement, ...], caps: HostCapabilities) -> list[Requirement]:
    absent = []
    for req in requirements:
        kind, _, name = req.check.partition(":")
        present = name in caps.kernel if kind == "kernel" else name in caps.tools
        if not present:
            absent.append(req)
    return absent


def tools_of(requirements: tuple[Requirement, ...]) -> tuple[str, ...]:
    return tuple(r.check.partition(":")[2] for r in requirements if r.check.startswith("tool:"))
