"""Facts about a target directory and the host, collected once as plain data.

Collection touches the system; deciding what the facts mean is eligibility.py's job.
A probe that fails is recorded as a fact (None / the error), never raised.
"""

from __future__ import annotations

import errno
import mmap
import os
import platform
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from backupbench.artefacts import TAG, ArtefactName
from backupbench.hostfiles import HostFiles, MountEntry, find_mount

MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs", "devtmpfs"})
# The kernel's own interfaces mounted as filesystems: files there are knobs and reports,
# nothing is stored (a test file in /proc cannot even be created: ENOENT).
KERNEL_FILESYSTEMS = frozenset({
    "proc", "sysfs", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs", "configfs", "devpts", "mqueue",
    "bpf", "pstore", "efivarfs", "fusectl", "binfmt_misc", "autofs", "nsfs", "selinuxfs", "rpc_pipefs",
})
_PROBE_BYTES = 4096


@dataclass(frozen=True)
class DirectoryFacts:
    path: str
    exists: bool
    is_dir: bool
    writable: bool
    free_bytes: int | None
    total_bytes: int | None
    fs_type: str | None
    mount_point: str | None
    source: str | None
    block_device: str | None
    read_only_mount: bool
    # None: not probed (not writable); False: the filesystem refused O_DIRECT.
    direct_io: bool | None
    direct_io_error: str | None
    mode: str | None = None  # e.g. '0700': what `chmod` left on a provisioned mount point
    owner_uid: int | None = None
    fs_options: tuple[str, ...] = ()  # the filesystem's own mount options (btrfs compress=zstd:3, ...)
    # Why writing failed, by errno name (ENOSPC, EDQUOT, EROFS, EACCES, ...); None: it did not.
    write_error: str | None = None
    # statvfs f_favail and f_files; None where the filesystem has no fixed number (btrfs, ramfs).
    free_inodes: int | None = None
    total_inodes: int | None = None
    uid: int | None = None  # who looked: the user the refusal names

    @property
    def kernel_interface(self) -> bool:
        return self.fs_type in KERNEL_FILESYSTEMS

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def memory_backed(self) -> bool:
        return self.fs_type in MEMORY_FILESYSTEMS


def _block_device(mount: MountEntry, host: HostFiles) -> str | None:
    link = host.path(f"/sys/dev/block/{mount.major_minor}")
    if os.path.exists(link):
        return os.path.basename(os.path.realpath(link))
    # btrfs and others report an anonymous device number; the source names the disk.
    if mount.source.startswith("/dev/"):
        return Path(mount.source).resolve().name
    return None


PROBE_FILE = ArtefactName(f".{TAG}-odirect-{{}}", "O_DIRECT probe file")


def probe_direct_io(directory: Path, tag: str | None = None) -> tuple[bool, str | None]:
    """Open and write one aligned block with O_DIRECT in `directory`, then remove it.
    tag: the run id, so that the probe file carries it (and a journal can name it)."""
    probe = directory / PROBE_FILE.of(tag or uuid.uuid4().hex)
    ours = False  # only ever unlink a file this probe created
    try:
        try:
            fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_DIRECT, 0o600)
        except OSError as exc:
            # Some filesystems create the file and only then refuse O_DIRECT (EINVAL).
            ours = exc.errno == errno.EINVAL
            raise
        ours = True
        try:
            with mmap.mmap(-1, _PROBE_BYTES) as buffer:  # page-aligned, as O_DIRECT requires
                os.write(fd, buffer)
        finally:
            os.close(fd)
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            return False, os.strerror(exc.errno)
        raise
    finally:
        if ours:
            probe.unlink(missing_ok=True)
    return True, None


def collect_directory(path: Path, *, probe_direct: bool = True, probe_tag: str | None = None,
                      host: HostFiles | None = None) -> DirectoryFacts:
    host = host or HostFiles()
    resolved = path.expanduser().resolve()
    exists = resolved.exists()
    is_dir = resolved.is_dir()
    writable = is_dir and os.access(resolved, os.W_OK | os.X_OK)
    mount: MountEntry | None = None
    space: dict = {"free_bytes": None, "total_bytes": None}
    read_only = False
    if is_dir:
        space, read_only = _space(resolved)
        mount = find_mount(str(resolved), host.mounts())
    # access() says no for a read-only filesystem too (EROFS), which statvfs tells apart.
    write_error = None if writable or not is_dir else "EROFS" if read_only else "EACCES"
    direct_io: bool | None = None
    direct_error: str | None = None
    if writable and probe_direct and not (mount and mount.fs_type in KERNEL_FILESYSTEMS):
        try:
            direct_io, direct_error = probe_direct_io(resolved, probe_tag)
        except OSError as exc:
            # EROFS, EACCES, ENOSPC, EDQUOT...: the directory is not usable for writing after all.
            writable, direct_error = False, os.strerror(exc.errno or 0)
            write_error = errno.errorcode.get(exc.errno or 0, direct_error)
    return DirectoryFacts(
        path=str(resolved), exists=exists, is_dir=is_dir, writable=writable,
        fs_type=mount.fs_type if mount else None,
        mount_point=mount.mount_point if mount else None,
        source=mount.source if mount else None,
        block_device=_block_device(mount, host) if mount else None,
        read_only_mount=bool(mount and mount.read_only),
        direct_io=direct_io, direct_io_error=direct_error,
        fs_options=mount.super_options if mount else (),
        write_error=write_error, uid=os.geteuid(), **space,
    )


def _space(directory: Path) -> tuple[dict, bool]:
    """Mode, owner, free and total bytes and inodes of an existing directory (statvfs), and
    whether its mount or filesystem is read-only."""
    st = directory.stat()
    stats = os.statvfs(directory)
    found = {"mode": f"{st.st_mode & 0o7777:04o}", "owner_uid": st.st_uid, "free_bytes": None, "total_bytes": None}
    # ramfs reports zero blocks: it has no size limit, so free space is unknown, not zero.
    if stats.f_blocks:
        found.update(free_bytes=stats.f_bavail * stats.f_frsize, total_bytes=stats.f_blocks * stats.f_frsize)
    # btrfs and ramfs report no inodes at all: they make them as needed.
    if stats.f_files:
        found.update(free_inodes=stats.f_favail, total_inodes=stats.f_files)
    return found, bool(stats.f_flag & os.ST_RDONLY)


def collect_host(host: HostFiles | None = None) -> dict:
    uname = os.uname()
    memory_kib = (host or HostFiles()).meminfo().get("MemTotal")
    return {
        "hostname": uname.nodename,
        "kernel": uname.release,
        "machine": uname.machine,
        "os": platform.platform(),
        "cpus": os.cpu_count(),
        "memory_bytes": memory_kib * 1024 if memory_kib is not None else None,
        "python": platform.python_version(),
    }
