"""May this block device be written? Checked when planning, and again right before writing.

`eligible` collects the facts and applies the rules. `recheck_before_write` is called by a
layout immediately before its first destructive command: everything is collected again, at
that moment (by it, or by its caller for all the devices of the write: devices/checks.py), and it
refuses if any rule objects, if anything changed since the plan was made, or if an
exclusive open (O_EXCL) fails, which the kernel refuses (EBUSY) while the device is mounted
(in any mount namespace, so also where our mountinfo cannot see it), held by
device-mapper or md, active swap, or held open exclusively by another program. Every
problem found is reported at once.

Between this check and the layout tool's own open there is an unavoidable gap; the
layout tools (pvcreate, mdadm, mkfs) open with O_EXCL themselves and fail on a busy device.
"""

from __future__ import annotations

import errno
import os
from typing import Callable, Mapping

from backupbench import process, units
from backupbench.devices.blockfacts import BlockFacts, Probed, collect
from backupbench.devices.probe_host import Host
from backupbench.devices.systemfacts import Runner, SystemFacts
from backupbench.devices.blockrules import refusals
from backupbench.devices.eligibility import Reason
from backupbench.errors import RefusedError


class DeviceRefused(RefusedError):
    """A device failed its check; `reasons` says why, `facts` what was found."""

    def __init__(self, message: str, fix: str | None, facts: BlockFacts, reasons: list[Reason]):
        super().__init__(message, fix)
        self.facts = facts
        self.reasons = reasons


def eligible(path: str | os.PathLike[str], *, run: Runner = process.run, host: Host | None = None,
             system: SystemFacts | None = None,
             signatures: Mapping[str, Probed] | None = None) -> tuple[BlockFacts, list[Reason]]:
    """The facts about the device at `path` and the reasons it may not be used (read-only)."""
    facts = collect(path, run=run, host=host, system=system, signatures=signatures)
    return facts, refusals(facts)


def _signature_text(facts: BlockFacts) -> str:
    return ", ".join(f"{s.type}@{s.offset:#x}" if s.offset is not None else s.type
                     for s in facts.signatures) or "none"


def _list_text(items: tuple) -> str:
    return ", ".join(" on ".join(i) if isinstance(i, tuple) else str(i) for i in items) or "none"


def changes(before: BlockFacts, after: BlockFacts) -> list[str]:
    """What differs between two looks at the same device, in words (pure)."""
    found = []
    if before.resolved != after.resolved:
        found.append(f"the path now leads to {after.resolved}, not {before.resolved}")
    if (before.kernel_name, before.major_minor) != (after.kernel_name, after.major_minor):
        found.append(f"it is now device {after.kernel_name} ({after.major_minor}), "
                     f"not {before.kernel_name} ({before.major_minor})")
    if before.size_bytes != after.size_bytes:
        def size(n: int | None) -> str:
            return units.format_size(n) if n is not None else "unknown"
        found.append(f"size {size(before.size_bytes)} -> {size(after.size_bytes)}")
    if set(before.signatures) != set(after.signatures):
        found.append(f"signatures {_signature_text(before)} -> {_signature_text(after)}")
    for name, label in (("holders", "holders"), ("partitions", "partitions"),
                        ("mountpoints", "mount points"), ("child_mountpoints", "mounts above it"),
                        ("child_swaps", "swap above it")):
        old, new = getattr(before, name), getattr(after, name)
        if set(old) != set(new):
            found.append(f"{label} {_list_text(old)} -> {_list_text(new)}")
    for name, label in (("is_swap", "in use as swap"), ("read_only", "read-only"),
                        ("lvm_pv", "LVM physical volume"), ("md_member", "md member")):
        old, new = getattr(before, name), getattr(after, name)
        if old != new:
            found.append(f"{label}: {old} -> {new}")
    return found


def open_exclusive(path: str) -> None:
    """Open the device read-only with O_EXCL and close it again; raises OSError (EBUSY)."""
    fd = os.open(path, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC)
    os.close(fd)


def recheck_before_write(path: str | os.PathLike[str], *, expected: BlockFacts | None = None,
                         run: Runner = process.run, host: Host | None = None,
                         system: SystemFacts | None = None, signatures: Mapping[str, Probed] | None = None,
                         open_exclusive: Callable[[str], None] = open_exclusive) -> None:
    """Raise DeviceRefused (a RefusedError) unless the device may be written right now.

    Collects every fact again (nothing from the plan), applies the rules, compares with
    `expected` (the facts the plan was made from) and requires an exclusive open to succeed.
    `system` (lsblk, pvs, mounts) and `signatures` (wipefs): only what the caller collected
    for all the devices of this write right before calling, never facts kept from earlier.
    """
    facts = collect(path, run=run, host=host, system=system, signatures=signatures)
    reasons = refusals(facts)
    if expected is not None:
        changed = changes(expected, facts)
        if changed:
            reasons.append(Reason(f"{facts.display_name} changed since it was checked: " + "; ".join(changed),
                                  "find out what changed it, then plan again"))
    if facts.exists and facts.is_block:
        busy = _exclusive_open_problem(facts, open_exclusive)
        if busy:
            reasons.append(busy)
    if reasons:
        fix = reasons[0].fix if len(reasons) == 1 else f"see `backupbench devices {facts.path}` for each fix"
        raise DeviceRefused(f"refusing to write to {facts.display_name}: "
                            + "; ".join(r.problem for r in reasons), fix, facts, reasons)


def _exclusive_open_problem(facts: BlockFacts, open_exclusive: Callable[[str], None]) -> Reason | None:
    """None when an exclusive open succeeds; otherwise why the kernel said no."""
    try:
        open_exclusive(facts.resolved)
    except OSError as exc:
        if exc.errno == errno.EBUSY:
            return Reason(
                f"{facts.display_name} is in use by the kernel: an exclusive open failed (EBUSY); "
                "it is mounted (perhaps in another mount namespace), held by device-mapper or md, "
                "active swap, or held open exclusively by another program",
                "find the user with `lsblk`, `findmnt --source` and `fuser -vm`; "
                "backupbench writes only to unused devices")
        return Reason(f"{facts.display_name} cannot be opened exclusively: {exc.strerror or exc}",
                      "run as root, and name a device that exists")
    return None
