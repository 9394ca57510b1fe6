"""Every rule a fault must pass, in one place: which layouts backupbench can fail members of,
what their redundancy allows, what each kind's way of failing and rebuilding cannot do (a
dRAID's distributed spares, btrfs's one replace at a time, MinIO's quorums), and that data
loss is tested only in the lab VM.

A layout declares the facts these rules read (`LayoutFacts`: its members, how many may fail,
its dRAID spares, whether MinIO serves it); the rules never ask a layout anything else. The
recipe's checks (`fits`, `fits_kind`, called by the layout's spec) raise ValueError, shown with
the layout's key path; the plan's check (`plan_refusals`) returns reasons, printed with the plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from backupbench.faults.plan import FaultPlan
from backupbench.faults.spec import DISTRIBUTED_SPARE, FaultSpec, onto_distributed_spare
from backupbench.layout_model import ErasureSets

# The layout kinds faults/plan.py has a plan for; other kinds with redundancy refuse a fault.
FAILS_MEMBERS_OF = ("mdraid", "zfs", "btrfs", "minio-ec")
# The same, as a sentence says it (the recipe reference and the refusal).
FAILS_MEMBERS_OF_TEXT = f"{', '.join(FAILS_MEMBERS_OF[:-1])} and {FAILS_MEMBERS_OF[-1]}"
# The one kind whose vdevs may be dRAID, the only layouts with distributed spares.
DRAID_KIND = "zfs"


@dataclass(frozen=True)
class LayoutFacts:
    """What a layout tells the fault rules about itself."""

    kind: str
    devices: tuple[str, ...]            # its members, as its devices key names them
    survives: int                       # members that may fail without losing data (0: no redundancy)
    shape: str = ""                     # what gives it that redundancy, for the refusal: " (RAID 0)"
    draid_parity: int | None = None     # a ZFS dRAID vdev's parity; None: no dRAID
    distributed_spares: int = 0         # a dRAID's distributed spares
    served_by_minio: bool = False       # `minio = true`: a MinIO server holds the filesystem open
    erasure_parity: int | None = None   # minio-ec's EC:N, given or MinIO's default (layout_model)
    erasure_set: int | None = None      # minio-ec's drives per erasure set; None: all of them


def fits(fault: FaultSpec, layout: LayoutFacts) -> None:
    """The rules every kind shares. ValueError (one line) when the fault cannot be run."""
    if layout.survives and layout.kind not in FAILS_MEMBERS_OF:
        raise ValueError(f"fault: backupbench fails and rebuilds members of {FAILS_MEMBERS_OF_TEXT} "
                         f"layouts; {layout.kind} is not supported yet")
    if fault.copy_back is not None and layout.kind != DRAID_KIND:
        raise ValueError("fault: copy_back follows a dRAID distributed spare's rebuild; on other layouts "
                         "the replacement is the real disk already")
    if fault.replace == DISTRIBUTED_SPARE and layout.kind != DRAID_KIND:
        raise ValueError("fault: replace = 'spare' is a dRAID distributed spare; give a replacement disk "
                         "from [devices]")
    _fits_redundancy(fault, layout)


def _fits_redundancy(fault: FaultSpec, layout: LayoutFacts) -> None:
    kind, devices, redundancy = layout.kind, layout.devices, layout.survives
    if redundancy == 0:
        raise ValueError(f"a fault needs redundancy, and this {kind} layout has none{layout.shape}: a failed member "
                         "loses the data (use mdraid 1/5/6/10, zfs mirror/raidz/draid)")
    count = fault.failure_count()
    if count > len(devices):
        raise ValueError(f"fault: fail = {count} members, but the layout has {len(devices)}")
    strangers = [d for d in fault.failed(devices) if d not in devices]
    if strangers:
        raise ValueError(f"fault: {', '.join(strangers)} is not a member of this layout; a fault fails only "
                         f"the layout's own devices, named as its devices key names them ({', '.join(devices)})")
    twice = [d for d in fault.disks_written() if d in devices]
    if twice:
        raise ValueError(f"fault: replace = {', '.join(twice)} is already a member; name a device from [devices] "
                         "the layout does not use")
    replacements = fault.replacements()
    if replacements and len(replacements) != count:
        raise ValueError(f"fault: {count} failed member(s) need as many replacements, got {len(replacements)}")
    if count > redundancy and not fault.allow_data_loss:
        raise ValueError(f"fault: failing {count} members of a layout that survives {redundancy} loses its data; "
                         "set allow_data_loss = true to do it anyway (only in the lab VM)")


def fits_kind(fault: FaultSpec, layout: LayoutFacts) -> None:
    """The rules of the kind's own way of failing and rebuilding (checked after the layout's
    devices are known to be named once each). ValueError (one line)."""
    rule = _KIND_RULES.get(layout.kind)
    problem = rule(fault, layout) if rule is not None else None
    if problem:
        raise ValueError(problem)


def _zfs(fault: FaultSpec, layout: LayoutFacts) -> str | None:
    """Why `replace = 'spare'` (or `copy_back`) cannot be honoured, or None."""
    spared = onto_distributed_spare(fault, layout.draid_parity, layout.distributed_spares)
    if fault.copy_back is not None and not spared:
        return "fault: copy_back needs the rebuild to go onto a dRAID distributed spare first (replace = 'spare')"
    if fault.copy_back is not None and fault.failure_count() != 1:
        return "fault: copy_back copies one failed member back; fail = 1"
    if fault.replace != DISTRIBUTED_SPARE:
        return None
    if layout.draid_parity is None:
        return "fault: replace = 'spare' needs a dRAID vdev with distributed spares"
    count = fault.failure_count()
    if count > layout.distributed_spares:
        return f"fault: {count} failed member(s) need as many distributed spares, the dRAID has " \
               f"{layout.distributed_spares}"
    return None


def _btrfs(fault: FaultSpec, layout: LayoutFacts) -> str | None:
    """btrfs: `btrfs replace` one member at a time, and a member fails by an unmount (plan.py)."""
    if len(fault.replacements()) > 1:
        return ("fault: btrfs replaces one device at a time; fail one member, or give no "
                "replacement (measured degraded only)")
    if layout.served_by_minio:
        return ("fault: a btrfs fault unmounts the filesystem to fail a member, which the MinIO "
                "server on it would hold busy; drop minio = true or the fault")
    if fault.failure_count() >= len(layout.devices):
        return (f"fault: failing all {len(layout.devices)} members of a btrfs leaves none to mount degraded; "
                "fail fewer")
    return None


def _minio_erasure(fault: FaultSpec, layout: LayoutFacts) -> str | None:
    """MinIO serves nothing without read quorum, and fails writes without write quorum. The
    failed drives are taken to be in one set: the worst case, and the only one with one set."""
    count, drives = fault.failure_count(), len(layout.devices)
    if count > layout.survives:
        return (f"fault: MinIO with {count} of {drives} drives gone (parity {layout.survives}) loses "
                "read quorum and serves nothing, so there is nothing to measure; allow_data_loss "
                "does not apply to minio-ec")
    if layout.erasure_parity is None:
        return None
    sets = ErasureSets(drives, layout.erasure_set or drives, layout.erasure_parity)
    writable = sets.size - sets.write_quorum
    if count > writable:
        return (f"fault: failing {count} of {drives} drives at EC:{sets.parity} leaves MinIO "
                f"without write quorum ({sets.write_quorum} drives): the degraded writes would fail; "
                f"fail at most {writable}")
    return None


_KIND_RULES: dict[str, Callable[[FaultSpec, LayoutFacts], str | None]] = {
    "zfs": _zfs, "btrfs": _btrfs, "minio-ec": _minio_erasure,
}


def plan_refusals(fault: FaultPlan | None, in_lab: bool) -> list[str]:
    """Failing more members than the parity survives is a test of data loss: only on a lab
    VM's throwaway disks, never on a machine whose disks could matter."""
    if fault is None or in_lab or len(fault.failed) <= fault.survives:
        return []
    count = len(fault.failed)
    return [f"fault: failing {count} members loses the data; allow_data_loss is honoured only in the lab VM "
            "(backupbench lab RECIPE)"]
