"""Which device a path names: its device number and where its links lead, not its spelling.

`/dev/loop8`, a symlink to it and `/dev/disk/by-id/...` are three spellings of one disk;
so is a second device node made with the same number. The recipe compares devices as
written (each layout device is in [devices], named once, a fault fails a member as the
layout names it); those comparisons are right only while no two spellings name one device.
`aliases` is the check of that premise, made by `plan` before anything is written: a
layout that formats one disk twice through two names would otherwise run mkfs (or mdadm,
or pvcreate) and fail midway.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Iterable

from backupbench.devices.probe_host import Host


@dataclass(frozen=True)
class DeviceIdentity:
    path: str                 # as the user wrote it
    resolved: str             # every symlink followed
    number: str | None        # a block device's major:minor (st_rdev); None for anything else

    @property
    def key(self) -> tuple[str, str]:
        """Equal for two spellings of one device: the number when there is one (two nodes of
        one device are one device), else the resolved path (a missing device, a file)."""
        return ("number", self.number) if self.number else ("path", self.resolved)

    @property
    def described(self) -> str:
        """'/dev/loop8, 7:8': what the spellings lead to."""
        return f"{self.resolved}, {self.number}" if self.number else self.resolved


# path -> its identity
Identify = Callable[[str], DeviceIdentity]


def identify(path: str, host: Host | None = None) -> DeviceIdentity:
    """The device `path` names on this host (a stat and a readlink; nothing is opened)."""
    info = (host or Host()).path_info(path)
    return DeviceIdentity(path, info.resolved, info.major_minor)


def as_written(path: str) -> DeviceIdentity:
    """The identity a path has when the host is not asked: its spelling, made absolute."""
    return DeviceIdentity(path, os.path.abspath(path), None)


def aliases(paths: Iterable[str], identify: Identify = identify) -> list[tuple[DeviceIdentity, ...]]:
    """Every group of two or more distinct spellings that name one device, in the order first
    written. A spelling repeated exactly is not an alias (the recipe refuses those itself)."""
    groups: dict[tuple[str, str], list[DeviceIdentity]] = {}
    for path in dict.fromkeys(paths):
        found = identify(path)
        groups.setdefault(found.key, []).append(found)
    return [tuple(group) for group in groups.values() if len(group) > 1]


def alias_problem(group: tuple[DeviceIdentity, ...]) -> str:
    """One line naming every spelling of the device, what they lead to, and the fix."""
    names = [identity.path for identity in group]
    spelled = " and ".join(names) if len(names) == 2 else ", ".join(names[:-1]) + " and " + names[-1]
    return (f"{spelled} are one device ({group[0].described}); name each device one way in the recipe "
            "(keep one of the names), or a layout could format it twice")
