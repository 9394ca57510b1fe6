"""Where block-device facts are read from: the live system, or a copy under a root dir.

Every read of /sys, /proc and every stat of a path the user named goes through a `Host`,
so tests hand in `Host(root=tmp_path)` with recorded files (and override `path_info` for
/dev nodes they cannot create) instead of patching globals.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from backupbench.hostfiles import HostFiles


@dataclass(frozen=True)
class PathInfo:
    """What a path is, following symlinks; plain data."""

    path: str                 # as given
    resolved: str             # every symlink followed
    is_symlink: bool          # the path itself is a symlink
    exists: bool              # the final target exists
    kind: str                 # "block device", "regular file", "directory", ..., "missing"
    major_minor: str | None   # a block device's device number, "254:112"
    error: str | None = None  # the path could not be examined (e.g. permission denied)

    @property
    def is_block(self) -> bool:
        return self.kind == "block device"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISBLK, "block device"), (stat.S_ISREG, "regular file"),
                       (stat.S_ISDIR, "directory"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISFIFO, "named pipe"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "special file"


class Host(HostFiles):
    """HostFiles plus what device probing needs: following links, stat of the user's paths."""

    def _real(self, path: str) -> str:
        return self.path(path)

    def realpath(self, path: str) -> str:
        """`path` with every symlink followed, as a path on the host (root stripped)."""
        real = os.path.realpath(self._real(path))
        if self.root == "/":
            return real
        return "/" + os.path.relpath(real, os.path.realpath(self.root))

    def path_info(self, path: str) -> PathInfo:
        """Stat a path the user named (lstat for the link, stat for its target). Never raises."""
        real = self._real(path)
        try:
            is_link = stat.S_ISLNK(os.lstat(real).st_mode)
        except FileNotFoundError:
            return PathInfo(path, os.path.abspath(path), False, False, "missing", None)
        except OSError as exc:
            return PathInfo(path, os.path.abspath(path), False, False, "unknown", None,
                            f"cannot examine {path}: {exc.strerror}")
        resolved = self.realpath(path)
        try:
            st = os.stat(real)
        except FileNotFoundError:
            return PathInfo(path, resolved, is_link, False, "missing", None)
        except OSError as exc:
            return PathInfo(path, resolved, is_link, False, "unknown", None,
                            f"cannot examine {path}: {exc.strerror}")
        kind = _kind(st.st_mode)
        number = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}" if kind == "block device" else None
        return PathInfo(path, resolved, is_link, True, kind, number)
