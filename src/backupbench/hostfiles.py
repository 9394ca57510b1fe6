"""Where the kernel's files are read from: the live system, or a recorded copy under a root.

Every read of /proc, /sys and /dev goes through a HostFiles, so tests hand in
`HostFiles(root=tmp_path)` with recorded files instead of patching globals. The files more
than one stage reads are parsed here, once: the mount table (devices and the monitor) and
/proc/meminfo (host facts, the monitor, the small-file engine's flush progress).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True, slots=True)
class MountEntry:
    """One line of /proc/self/mountinfo."""

    mount_point: str
    major: int
    minor: int
    fs_type: str
    source: str
    options: tuple[str, ...] = ()
    super_options: tuple[str, ...] = ()  # the filesystem's own (btrfs compress=..., xfs ...)

    @property
    def major_minor(self) -> str:
        return f"{self.major}:{self.minor}"

    @property
    def read_only(self) -> bool:
        # The mount (mount -o ro, a read-only bind) or the filesystem itself (ext4 after
        # errors=remount-ro): either way every write fails with EROFS.
        return "ro" in self.options or "ro" in self.super_options


def unescape_mount_field(field: str) -> str:
    """The kernel writes space, tab, newline and backslash in a mount field as octal (\\040);
    every other character, 'é' included, stands as itself."""
    return _OCTAL_ESCAPE.sub(lambda match: chr(int(match.group(1), 8)), field) if "\\" in field else field


def parse_mountinfo(text: str) -> list[MountEntry]:
    """/proc/self/mountinfo -> entries in file order (later entries mount over earlier ones)."""
    entries: list[MountEntry] = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        lf, rf = left.split(), right.split()
        if len(lf) < 6 or len(rf) < 2:
            continue
        major, _, minor = lf[2].partition(":")
        try:
            entries.append(MountEntry(unescape_mount_field(lf[4]), int(major), int(minor), rf[0],
                                      unescape_mount_field(rf[1]), tuple(lf[5].split(",")),
                                      tuple(rf[2].split(",")) if len(rf) > 2 else ()))
        except ValueError:
            continue
    return entries


def find_mount(path: str, entries: list[MountEntry]) -> MountEntry | None:
    """The mount holding an absolute path: the longest mount point, the last one on ties
    (the kernel lists the topmost mount last)."""
    best: MountEntry | None = None
    for entry in entries:
        point = entry.mount_point.rstrip("/") or "/"
        if point == "/" or path == point or path.startswith(point + "/"):
            if best is None or len(point) >= len(best.mount_point.rstrip("/") or "/"):
                best = entry
    return best


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo -> {field: value}; the kernel's 'kB' there means KiB."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts:
            try:
                values[key.strip()] = int(parts[0])
            except ValueError:
                continue
    return values


class HostFiles:
    """Reads files of the host, relative to `root` ('/' for the live system)."""

    def __init__(self, root: str | os.PathLike[str] = "/"):
        self.root = os.fspath(root)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(root={self.root!r})"

    def path(self, path: str) -> str:
        """Where `path` ('/proc/stat', 'sys/block') really is on disk."""
        if self.root == "/":
            return os.path.join("/", path)
        return os.path.join(self.root, os.path.abspath(os.path.join("/", path)).lstrip("/"))

    def read_text(self, path: str) -> str:
        """The whole file; raises OSError like open() when it cannot be read."""
        with open(self.path(path), encoding="utf-8", errors="replace") as handle:
            return handle.read()

    def read_value(self, path: str) -> str | None:
        """A small sysfs attribute, stripped; None when absent or unreadable."""
        try:
            return self.read_text(path).strip()
        except OSError:
            return None

    def exists(self, path: str) -> bool:
        return os.path.exists(self.path(path))

    def listdir(self, path: str) -> list[str]:
        """Entries sorted by name; [] when the directory is absent."""
        try:
            return sorted(os.listdir(self.path(path)))
        except OSError:
            return []

    def readlink(self, path: str) -> str | None:
        """The target text of a symlink (as stored, often relative); None if not a link."""
        try:
            return os.readlink(self.path(path))
        except OSError:
            return None

    def mounts(self) -> list[MountEntry]:
        """The mount table as this process sees it; raises OSError when unreadable."""
        return parse_mountinfo(self.read_text("/proc/self/mountinfo"))

    def meminfo(self) -> dict[str, int]:
        """/proc/meminfo in KiB; {} when unreadable."""
        try:
            return parse_meminfo(self.read_text("/proc/meminfo"))
        except OSError:
            return {}
