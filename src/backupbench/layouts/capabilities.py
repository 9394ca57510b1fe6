"""What this kernel and these tools offer, collected once; missing() is pure."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from backupbench import process
from backupbench.errors import ToolMissingError
from backupbench.hostfiles import HostFiles
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


def _module_files(host: HostFiles, release: str) -> set[str]:
    names: set[str] = set()
    modules_dir = host.path(f"/lib/modules/{release}")
    for _, _, files in os.walk(modules_dir):
        for file in files:
            if ".ko" in file:
                names.add(file.split(".ko")[0].replace("-", "_"))
    return names


def collect(host: HostFiles | None = None, which=shutil.which, tools: tuple[str, ...] = (),
            release: str | None = None) -> HostCapabilities:
    host = host or HostFiles()

    def read(path: str) -> str:
        try:
            return host.read_text(path)
        except OSError:
            return ""

    misc, filesystems = read("/proc/misc"), read("/proc/filesystems")
    loaded = set(host.listdir("/sys/module"))
    # A module file counts only where the kernel can load it: a kernel built without module
    # support has no /proc/modules, and one may have had loading switched off since boot.
    loadable = host.exists("/proc/modules") and read("/proc/sys/kernel/modules_disabled").strip() != "1"
    available = loaded | (_module_files(host, release or os.uname().release) if loadable else set())
    kernel = set()
    for feature, modules in _MODULES.items():
        if any(m.replace("-", "_") in available for m in modules):
            kernel.add(feature)
    if "device-mapper" in misc:
        kernel.add("dm")
    if host.exists("/proc/mdstat"):
        kernel.add("md")
    for fs in ("xfs", "ext4", "btrfs"):
        if any(line.split()[-1] == fs for line in filesystems.splitlines() if line.split()):
            kernel.add(f"fs:{fs}")
    return HostCapabilities(frozenset(kernel), frozenset(t for t in tools if which(t)))


def which(tool: str) -> str | None:
    """A tool on PATH; MinIO also where the project builds it (.tools/bin)."""
    found = shutil.which(tool)
    if found or tool != "minio":
        return found
    try:
        return process.project_tool("minio", "BACKUPBENCH_MINIO")
    except ToolMissingError:
        return None


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
