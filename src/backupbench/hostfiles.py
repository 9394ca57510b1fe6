"""Where the kernel's files are read from: the live system, or a recorded copy under a root.

Every read of /proc, /sys and /dev goes through a HostFiles, so tests hand in
`HostFiles(root=tmp_path)` with recorded files instead of patching globals.
"""

from __future__ import annotations

import os


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
