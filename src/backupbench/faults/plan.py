"""What a fault does on each kind of layout, as commands: fail the members, start the
rebuild, and (md) the speed limits set for the run. The layouts' planners make a FaultPlan
beside their actions; the runner (runner/faulted.py) carries it out, journalled.

md: `mdadm --fail` then `--remove` (the array runs degraded), `--add` of the replacement
(recovery onto it). ZFS: `zpool offline -f` (faulted, as a dead disk is), then `zpool replace`
onto the replacement disk (a healing resilver), or `zpool replace -s` onto a dRAID distributed
spare (a sequential rebuild spread over every child; the scrub ZFS starts after it is not
counted). btrfs has no command that fails a member of a mounted filesystem: the filesystem is
unmounted, the member's superblock wiped (as a dead disk is, unreadable) and the rest mounted
`-o degraded`; `btrfs replace start <devid>` then copies the missing member's chunks onto the
replacement (one replace at a time: btrfs allows no more)."""

from __future__ import annotations

from dataclasses import dataclass

from backupbench.faults.spec import DISTRIBUTED_SPARE, FaultSpec

Argv = tuple[str, ...]
MD_SYSCTL = "dev.raid.speed_limit_{}"


@dataclass(frozen=True)
class FaultPlan:
    spec: FaultSpec
    kind: str                      # "md", "zfs" or "btrfs": which reader follows the rebuild
    array: str                     # the md device or the pool
    failed: tuple[str, ...]
    replacements: tuple[str, ...]  # disks written by the rebuild (none for a distributed spare)
    fail: tuple[Argv, ...]
    rebuild: tuple[Argv, ...]      # empty: no replacement, the array stays degraded
    sysctls: tuple[tuple[str, int], ...] = ()  # (name, KiB/s) set for the run, restored after
    target: str = ""               # what the rebuild goes onto, for captions
    survives: int = 0              # members the layout may lose without losing data
    member_ids: tuple[int, ...] = ()  # btrfs: the failed members' devids (their order at mkfs)

    @property
    def rebuilds(self) -> bool:
        return bool(self.rebuild)


def md_fault(spec: FaultSpec, md_device: str, devices: tuple[str, ...], survives: int) -> FaultPlan:
    failed = spec.failed(devices)
    fail = tuple(argv for device in failed
                 for argv in (("mdadm", "--manage", md_device, "--fail", device),
                              ("mdadm", "--manage", md_device, "--remove", device)))
    replacements = spec.replacements()
    rebuild = (("mdadm", "--manage", md_device, "--add", *replacements),) if replacements else ()
    sysctls = tuple((MD_SYSCTL.format(which), value // 1024)
                    for which, value in (("min", spec.speed_limit_min), ("max", spec.speed_limit_max))
                    if value is not None)
    return FaultPlan(spec, "md", md_device, failed, replacements, fail, rebuild, sysctls,
                     ", ".join(replacements) or "no replacement", survives)


def zfs_fault(spec: FaultSpec, pool: str, devices: tuple[str, ...], draid_parity: int | None,
              draid_spares: int, survives: int) -> FaultPlan:
    failed = spec.failed(devices)
    fail = tuple(("zpool", "offline", "-f", pool, device) for device in failed)
    replace = spec.replace
    if replace is None and draid_parity is not None and draid_spares > 0:
        replace = DISTRIBUTED_SPARE
    if replace == DISTRIBUTED_SPARE:
        # dRAID names its spares draid<parity>-<top-level vdev>-<spare>; the pool has one vdev.
        spares = tuple(f"draid{draid_parity}-0-{index}" for index in range(len(failed)))
        rebuild = tuple(("zpool", "replace", "-s", pool, old, new) for old, new in zip(failed, spares))
        return FaultPlan(spec, "zfs", pool, failed, (), fail, rebuild, target=", ".join(spares) + " (distributed)",
                         survives=survives)
    replacements = spec.replacements()
    rebuild = tuple(("zpool", "replace", pool, old, new) for old, new in zip(failed, replacements))
    return FaultPlan(spec, "zfs", pool, failed, replacements, fail, rebuild,
                     target=", ".join(replacements) or "no replacement", survives=survives)


def distributed_spare_problem(spec: FaultSpec, draid_parity: int | None, draid_spares: int) -> str | None:
    """Why `replace = 'spare'` cannot be honoured, or None."""
    if spec.replace != DISTRIBUTED_SPARE:
        return None
    if draid_parity is None:
        return "fault: replace = 'spare' needs a dRAID vdev with distributed spares"
    count = spec.failure_count()
    if count > draid_spares:
        return f"fault: {count} failed member(s) need as many distributed spares, the dRAID has {draid_spares}"
    return None


def btrfs_fault(spec: FaultSpec, mount_point: str, devices: tuple[str, ...], mount_options: tuple[str, ...],
                survives: int) -> FaultPlan:
    failed = spec.failed(devices)
    survivor = next(d for d in devices if d not in failed)
    # mkfs.btrfs numbers the devices 1, 2, ... in the order it is given them.
    devids = tuple(devices.index(device) + 1 for device in failed)
    options = ",".join(("degraded", *mount_options))
    fail = (("umount", mount_point), *(("wipefs", "-a", device) for device in failed),
            ("mount", "-o", options, survivor, mount_point))
    replacements = spec.replacements()
    rebuild = tuple(("btrfs", "replace", "start", str(devid), new, mount_point)
                    for devid, new in zip(devids, replacements))
    return FaultPlan(spec, "btrfs", mount_point, failed, replacements, fail, rebuild,
                     target=", ".join(replacements) or "no replacement", survives=survives, member_ids=devids)
