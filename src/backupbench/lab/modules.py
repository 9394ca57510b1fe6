"""Which kernel modules the guest carries, and which it loads at boot.

`modprobe -d STAGE -S KVER -a --show-depends NAME...` prints, for each name, the `insmod`
lines of its dependency closure in load order (or `builtin NAME` for what is compiled in).
`load_order` turns that text into one list without repeats, dependencies first.

Loading modules is slow under TCG (measured: xfs 1.1 s, btrfs 1.2 s, raid456 0.5 s for its
raid6 benchmark; all of GUEST_MODULES 4.7 s, more than the whole kernel boot). So the guest's
init loads only BOOT_MODULES, with busybox `insmod` in this order, and everything else in
GUEST_MODULES is loaded when first used: the kernel asks `modprobe` for `fs-xfs`,
`md-level-6`, `char-major-10-236` (device-mapper control) and so on, and LVM runs
`modprobe dm-thin-pool` itself. That works because the initramfs carries the closure of
GUEST_MODULES with a modules.dep made by depmod for exactly that set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from backupbench import process
from backupbench.errors import BackupbenchError

# Loaded by init, in this order: the virtual hardware, the host's root (read-only 9p), the
# control and results shares, and the overlay that makes the root writable in the guest.
BOOT_MODULES: tuple[str, ...] = ("virtio_pci", "virtio_blk", "9pnet_virtio", "9p", "overlay")

# Carried in the initramfs and loaded on first use: the storage stacks the lab can build.
GUEST_MODULES: tuple[str, ...] = BOOT_MODULES + (
    # device-mapper / LVM
    "dm-mod", "dm-thin-pool", "dm-snapshot", "dm-mirror", "dm-raid", "dm-cache", "dm-cache-smq",
    # md raid
    "md-mod", "raid0", "raid1", "raid10", "raid456",
    # filesystems
    "xfs", "ext4", "btrfs",
    # loop devices
    "loop",
)

# Carried when a ZFS module is built for the guest kernel (see zfs_module); zpool loads it.
ZFS_MODULES: tuple[str, ...] = ("zfs",)
EXTRA_FOLDER = "extra"  # where DKMS puts out-of-tree modules, ahead of the kernel's own in depmod's search


def add_extra(stage: Path, kernel_release: str, files: Sequence[Path]) -> None:
    """Out-of-tree modules (ZFS) into the staged kernel's module tree, before depmod."""
    folder = stage / "lib" / "modules" / kernel_release / EXTRA_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    for file in files:
        (folder / file.name).write_bytes(file.read_bytes())


def load_order(show_depends: str, modules_dir: str = "") -> list[str]:
    """`insmod` paths from `--show-depends` output, first occurrence kept, relative to
    `modules_dir` when they lie under it. `builtin` lines need nothing and are skipped."""
    prefix = modules_dir.rstrip("/") + "/" if modules_dir else ""
    order: list[str] = []
    for line in show_depends.splitlines():
        words = line.split()
        if len(words) < 2 or words[0] != "insmod":
            continue
        path = words[1]
        if prefix and path.startswith(prefix):
            path = path[len(prefix):]
        if path not in order:
            order.append(path)
    return order


def builtin_names(show_depends: str) -> list[str]:
    return [line.split()[1] for line in show_depends.splitlines() if line.startswith("builtin ") and len(line.split()) > 1]


def module_closure(stage: Path, kernel_release: str, names: Sequence[str] = GUEST_MODULES) -> list[str]:
    """Module files (relative to STAGE/lib/modules/KVER) to load, in order.

    A name that is neither a module nor built in fails the build: better now than as a
    missing device inside the guest.
    """
    modules_dir = stage / "lib" / "modules" / kernel_release
    done = process.run(["modprobe", "-d", str(stage), "-S", kernel_release, "-a", "--show-depends", *names],
                       timeout=60, check=False)
    if done.returncode != 0 or "not found" in done.stderr:
        raise BackupbenchError(f"the guest kernel {kernel_release} lacks a module the lab needs: "
                               f"{done.stderr.strip() or done.stdout.strip()}",
                               "report this with the kernel package version")
    return load_order(done.stdout, str(modules_dir))


SIGNATURE_MAGIC = b"~Module signature appended~\n"


def strip_signature(module: bytes) -> bytes:
    """The module without its appended signature (struct module_signature + PKCS#7 + magic).

    Checking the signature costs a SHA-256 of the module and an RSA verification per load,
    slow under TCG; the guest kernel does not enforce signatures, it only notes an unsigned
    module (taint flag E), which is irrelevant in a throwaway lab VM.
    """
    if not module.endswith(SIGNATURE_MAGIC):
        return module
    end = len(module) - len(SIGNATURE_MAGIC)
    info = module[end - 12:end]
    signer_len, key_id_len = info[3], info[4]
    sig_len = int.from_bytes(info[8:12], "big")
    start = end - 12 - sig_len - signer_len - key_id_len
    if start <= 0:
        raise ValueError("malformed module signature")
    return module[:start]


def subset_tree(stage: Path, kernel_release: str, paths: Sequence[str], dest: Path) -> list[tuple[str, bytes]]:
    """A module tree with only `paths` (and the kernel's lists of what is built in), indexed
    by depmod so that `modprobe` finds dependencies and aliases (fs-xfs, md-level-6, ...).

    Returns every file of DEST/lib/modules/KVER as (relative path, content), sorted.
    """
    source = stage / "lib" / "modules" / kernel_release
    target = dest / "lib" / "modules" / kernel_release
    for relative in paths:
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        (target / relative).write_bytes(strip_signature((source / relative).read_bytes()))
    for name in ("modules.builtin", "modules.builtin.modinfo", "modules.order"):
        if (source / name).exists():
            (target / name).write_bytes((source / name).read_bytes())
    process.run(["depmod", "-b", str(dest), kernel_release], timeout=300)
    files = sorted(p for p in target.rglob("*") if p.is_file())
    return [(str(p.relative_to(target)), p.read_bytes()) for p in files]
