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

from backupbench.hostfiles import HostFiles, MountEntry, find_mount

MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs", "devtmpfs"})
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


PROBE_PREFIX = ".backupbench-odirect-"


def probe_direct_io(directory: Path, tag: str | None = None) -> tuple[bool, str | None]:
    """Open and write one aligned block with O_DIRECT in `directory`, then remove it.
    tag: the run id, so that the probe file carries it (and a journal can name it)."""
    probe = directory / f"{PROBE_PREFIX}{tag or uuid.uuid4().hex}"
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
    free = total = None
    mount: MountEntry | None = None
    mode = owner = None
    if is_dir:
        st = resolved.stat()
        mode, owner = f"{st.st_mode & 0o7777:04o}", st.st_uid
        stats = os.statvfs(resolved)
        # ramfs reports zero blocks: it has no size limit, so free space is unknown, not zero.
        if stats.f_blocks:
            free, total = stats.f_bavail * stats.f_frsize, stats.f_blocks * stats.f_frsize
        mount = find_mount(str(resolved), host.mounts())
    direct_io: bool | None = None
    direct_error: str | None = None
    if writable and probe_direct:
        try:
            direct_io, direct_error = probe_direct_io(resolved, probe_tag)
        except OSError as exc:
            # EROFS, EACCES, ENOSPC...: the directory is not usable for writing after all.
            writable, direct_error = False, os.strerror(exc.errno or 0)
    return DirectoryFacts(
        path=str(resolved), exists=exists, is_dir=is_dir, writable=writable,
        free_bytes=free, total_bytes=total,
        fs_type=mount.fs_type if mount else None,
        mount_point=mount.mount_point if mount else None,
        source=mount.source if mount else None,
        block_device=_block_device(mount, host) if mount else None,
        read_only_mount=bool(mount and mount.read_only),
        direct_io=direct_io, direct_io_error=direct_error, mode=mode, owner_uid=owner,
        fs_options=mount.super_options if mount else (),
    )


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
