"""Build the lab's guest image once (kernel + initramfs) and keep it in a cache.

The cache lives in `$XDG_CACHE_HOME/backupbench/lab/<key>/` (default `~/.cache/...`), or under
a directory passed in. The key hashes everything the image is made of: the exact Debian
package versions (`linux-image-<abi>-amd64`, `mdadm`), the init script, the module list and
the busybox binary, so a kernel update or a change to the init script builds a new image and
an unchanged one is reused as is. Only the results are kept (`vmlinux` ~65 MB, `initramfs.cpio`
a few MB, `image.json`); the .debs and the ~400 MB staging folder are removed after the build.

Building needs the network (apt) and takes 11-15 s, mostly downloading and unpacking the
71 MB kernel package. Finding a cached image takes ~5 ms: which kernel package apt would pick
is remembered (`resolved.json`) until the apt lists change, because `apt-cache` costs ~1 s a
call where apt keeps no binary cache. When apt cannot answer (offline) the newest complete
image in the cache is used. Superseded images are removed an hour after a newer one is built.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from backupbench import process
from backupbench.errors import BackupbenchError, ToolMissingError
from backupbench.lab import cpio, initramfs, kernel, modules, zfs_module

log = logging.getLogger("backupbench.lab")

FORMAT = 1  # bump when the layout of a cached image changes
BUSYBOX = Path("/bin/busybox")
IMAGE_TOOLS = {"apt-get": "apt", "apt-cache": "apt", "dpkg-deb": "dpkg", "depmod": "kmod", "modprobe": "kmod"}

Progress = Callable[[str], None]


@dataclass(frozen=True)
class LabImage:
    directory: Path
    vmlinux: Path
    initramfs: Path
    kernel_release: str
    packages: tuple[str, ...]  # "name=version"
    zfs: str | None = None     # the ZFS version whose module the guest carries

    @staticmethod
    def load(directory: Path) -> "LabImage":
        meta = json.loads((directory / "image.json").read_text())
        return LabImage(directory, directory / "vmlinux", directory / "initramfs.cpio",
                        meta["kernel_release"], tuple(meta["packages"]), meta.get("zfs"))


def default_cache_root() -> Path:
    """$BACKUPBENCH_LAB_CACHE, else $XDG_CACHE_HOME/backupbench/lab (~/.cache/...)."""
    explicit = os.environ.get("BACKUPBENCH_LAB_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "backupbench" / "lab"


def _check_tools() -> None:
    for tool, package in IMAGE_TOOLS.items():
        if shutil.which(tool) is None:
            raise ToolMissingError(f"{tool} is not installed (needed to build the lab image)",
                                   f"install it with: apt-get install {package}")
    if not BUSYBOX.exists():
        raise ToolMissingError("busybox is not installed (the lab guest's shell)",
                               "install it with: apt-get install busybox-static")


def image_key(packages: list[kernel.Package], busybox: bytes, zfs: zfs_module.ZfsModule | None = None) -> str:
    """Hash of what the image is made of: packages, busybox, the ZFS module if one is built
    for this kernel, and the code that builds it (the init script, module lists and
    processing live in these modules' source)."""
    digest = hashlib.sha256()
    for part in (f"format={FORMAT}", *(p.spec for p in packages), zfs.fingerprint() if zfs else "no zfs"):
        digest.update(part.encode() + b"\0")
    for source in (initramfs, modules, kernel, cpio):
        digest.update(Path(source.__file__).read_bytes() + b"\0")
    digest.update(hashlib.sha256(busybox).digest())
    return digest.hexdigest()[:16]


def _complete(directory: Path) -> bool:
    return (directory / "image.json").is_file() and (directory / "vmlinux").is_file() \
        and (directory / "initramfs.cpio").is_file()


def newest_cached(cache_root: Path) -> LabImage | None:
    candidates = [d for d in cache_root.glob("*") if d.is_dir() and _complete(d)]
    if not candidates:
        return None
    return LabImage.load(max(candidates, key=lambda d: (d / "image.json").stat().st_mtime))


def ensure_image(cache_root: Path | None = None, progress: Progress | None = None) -> LabImage:
    """The cached image for the current Debian kernel, built first if missing."""
    say = progress or (lambda _message: None)
    _check_tools()
    root = (cache_root or default_cache_root()).expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    busybox = BUSYBOX.read_bytes()
    if not initramfs.is_static_elf(busybox):
        raise ToolMissingError(f"{BUSYBOX} is not the static busybox the guest needs as init",
                               "install it with: apt-get install busybox-static")
    try:
        packages = _resolve(root)
    except kernel.AptError:
        cached = newest_cached(root)
        if cached is None:
            raise
        log.warning("apt cannot resolve the guest kernel; using the cached image %s", cached.directory)
        return cached
    zfs = zfs_module.for_guest(packages[0])
    target = root / image_key(packages, busybox, zfs)
    if _complete(target):
        return LabImage.load(target)
    # One builder at a time (parallel test sessions, a bench and a lab run).
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _complete(target):
            return LabImage.load(target)
        return _build(target, packages, busybox, zfs, say)


def resolve_packages(cache_root: Path | None = None) -> list[kernel.Package]:
    """The guest kernel's package (first) and the userspace packages the image is built from."""
    root = (cache_root or default_cache_root()).expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    return _resolve(root)


APT_LISTS = Path("/var/lib/apt/lists")
PRUNE_AFTER_S = 3600  # an older image may still be booting in another process: leave it a while


def _prune(root: Path, keep: Path) -> None:
    """Remove superseded images (another kernel or init script) and stale build folders."""
    now = time.time()
    for entry in root.iterdir():
        if entry == keep or not entry.is_dir():
            continue
        is_image = (entry / "image.json").exists() or entry.name.startswith(".build-")
        try:
            old = now - entry.stat().st_mtime > PRUNE_AFTER_S
        except OSError:
            continue
        if is_image and old:
            shutil.rmtree(entry, ignore_errors=True)


def _lists_stamp() -> str:
    """Changes whenever `apt-get update` changes what apt knows."""
    digest = hashlib.sha256()
    try:
        for entry in sorted(os.scandir(APT_LISTS), key=lambda e: e.name):
            if entry.is_file():
                info = entry.stat()
                digest.update(f"{entry.name} {info.st_size} {info.st_mtime_ns}\n".encode())
    except OSError:
        return ""
    return digest.hexdigest()


def _resolve(root: Path) -> list[kernel.Package]:
    """kernel.resolve(), remembered until the apt lists change: `apt-cache` costs ~1 s a call
    where apt keeps no binary cache (Debian's container images), and boot time matters."""
    memo = root / "resolved.json"
    stamp = _lists_stamp()
    try:
        saved = json.loads(memo.read_text())
        if stamp and saved.get("stamp") == stamp:
            return [kernel.Package(name, version) for name, version in saved["packages"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    packages = kernel.resolve()
    stamp = _lists_stamp()  # resolve() may have run apt-get update
    if stamp:
        tmp = memo.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"stamp": stamp, "packages": [[p.name, p.version] for p in packages]}))
        tmp.replace(memo)
    return packages


def _build(target: Path, packages: list[kernel.Package], busybox: bytes, zfs: zfs_module.ZfsModule | None,
           say: Progress) -> LabImage:
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        debs_dir, stage, out = work / "debs", work / "stage", work / "image"
        for directory in (debs_dir, stage, out):
            directory.mkdir()
        say(f"downloading {', '.join(p.spec for p in packages)}")
        debs = kernel.download(packages, debs_dir)
        say("unpacking")
        kernel.unpack(debs, stage)
        release = kernel.kernel_release(stage)
        if zfs is not None:
            modules.add_extra(stage, release, zfs.files)
        kernel.depmod(stage, release)
        say(f"extracting vmlinux from {release}")
        bzimages = list((stage / "boot").glob(f"vmlinuz-{release}"))
        if not bzimages:
            raise BackupbenchError(f"the kernel package has no /boot/vmlinuz-{release}")
        (out / "vmlinux").write_bytes(kernel.extract_vmlinux(bzimages[0].read_bytes()))
        say("building the initramfs")
        carried = modules.module_closure(stage, release, modules.GUEST_MODULES + (modules.ZFS_MODULES if zfs else ()))
        boot = modules.module_closure(stage, release, modules.BOOT_MODULES)
        tree = modules.subset_tree(stage, release, carried, work / "subset")
        mdadm = stage / "sbin" / "mdadm"
        if not mdadm.exists():
            raise BackupbenchError("the mdadm package has no /sbin/mdadm")
        applets = process.run([str(BUSYBOX), "--list-full"], timeout=30).stdout.split()
        contents = initramfs.InitramfsContents(
            busybox=busybox, applets=applets, kernel_release=release,
            module_tree=tree, boot_modules=boot,
            binaries={"mdadm": mdadm.read_bytes()},
        )
        size = initramfs.build(contents, out / "initramfs.cpio")
        (out / "image.json").write_text(json.dumps({
            "format": FORMAT, "kernel_release": release, "packages": [p.spec for p in packages],
            "zfs": zfs.version if zfs else None,
            "boot_modules": boot, "modules": carried, "initramfs_bytes": size,
        }, indent=2) + "\n")
        if target.exists():
            shutil.rmtree(target)
        out.rename(target)
        _prune(target.parent, keep=target)
        return LabImage.load(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


__all__ = ["LabImage", "ensure_image", "default_cache_root", "newest_cached", "image_key"]
