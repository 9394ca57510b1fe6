"""A btrfs's own rebuild state: `btrfs replace status -1 MNT` (never started, N% done,
finished, canceled, suspended) and `btrfs filesystem show --raw MNT` (which devids are
missing, and how much each holds). A replace reports only a percentage: the bytes it copies
are what the failed member held, remembered from the samples taken while it was present."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from backupbench import process
from backupbench.errors import ProcessError
from backupbench.monitor.rebuild import RebuildState

_DEVID = re.compile(r"^\s*devid\s+(\d+)\s+size\s+(\d+)\s+used\s+(\d+)\s+path\s+(.*?)\s*$")
_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)% done")


@dataclass(frozen=True)
class Member:
    devid: int
    used: int
    missing: bool


def members(show_raw: str) -> dict[int, Member]:
    """The devices of `btrfs filesystem show --raw` by devid."""
    found = {}
    for line in show_raw.splitlines():
        match = _DEVID.match(line)
        if match:
            devid, _, used, path = match.groups()
            missing = "MISSING" in path or path.startswith("<missing")
            found[int(devid)] = Member(int(devid), int(used), missing)
    return found


def replace_status(text: str) -> tuple[str, float | None]:
    """('never' | 'running' | 'finished' | 'canceled' | 'suspended', percent) of `replace status -1`."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    running = _PERCENT.match(line)
    if running:
        return "running", float(running.group(1))
    if "finished on" in line:
        return "finished", 100.0
    for word in ("canceled", "suspended"):
        if f"{word} on" in line:
            return word, None
    if line.startswith("Never started"):
        return "never", None
    raise ValueError(f"btrfs replace status says something backupbench does not know: {line!r}")


def btrfs_state(show_raw: str, status: str, held: dict[int, int]) -> RebuildState:
    """From both commands' output; `held`: bytes each failed devid held when last present."""
    found = members(show_raw)
    progress, percent = replace_status(status)
    missing = any(member.missing for member in found.values()) or "Some devices missing" in show_raw
    total = sum(held.values()) or None
    done = int(total * percent / 100) if total and percent is not None else None
    rebuilding = progress == "running"
    return RebuildState(rebuilding, missing or rebuilding, percent, done, None,
                        finished=progress == "finished" and not missing)


# The fault's own moment (unmounted to fail a member, about to be mounted degraded): no
# filesystem at the mount point to ask.
_UNMOUNTED = RebuildState(False, True, None, None, None)


def _output(argv: list[str]) -> str:
    return process.run(argv, timeout=30).stdout


@dataclass
class BtrfsReader:
    mount_point: str
    devids: tuple[int, ...]                  # the members the fault fails
    held: dict[int, int] = field(default_factory=dict)

    def __call__(self) -> RebuildState:
        try:
            return self._read()
        except ProcessError:
            if not os.path.ismount(self.mount_point):
                return _UNMOUNTED  # unmounted between the check and the command: not a failure
            raise

    def _read(self) -> RebuildState:
        if not os.path.ismount(self.mount_point):
            return _UNMOUNTED
        show = _output(["btrfs", "filesystem", "show", "--raw", self.mount_point])
        # While present, and again once replaced (then: what the replace copied).
        for devid, member in members(show).items():
            if devid in self.devids and not member.missing and member.used:
                self.held[devid] = member.used
        status = _output(["btrfs", "replace", "status", "-1", self.mount_point])
        return btrfs_state(show, status, self.held)
