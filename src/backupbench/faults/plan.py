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

from backupbench.faults.spec import FaultSpec, onto_distributed_spare

Argv = tuple[str, ...]
MD_SYSCTL = "dev.raid.speed_limit_{}"


@dataclass(frozen=True, kw_only=True)
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
    copy_back: tuple[Argv, ...] = ()  # dRAID: the failed member replaced by a real disk after the spare
    copy_back_disk: str = ""

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
    return FaultPlan(spec=spec, kind="md", array=md_device, failed=failed, replacements=replacements, fail=fail,
                     rebuild=rebuild, sysctls=sysctls, target=", ".join(replacements) or "no replacement",
                     survives=survives)


def zfs_fault(spec: FaultSpec, *, pool: str, devices: tuple[str, ...], draid_parity: int | None,
              draid_spares: int, survives: int) -> FaultPlan:
    failed = spec.failed(devices)
    fail = tuple(("zpool", "offline", "-f", pool, device) for device in failed)
    if onto_distributed_spare(spec, draid_parity, draid_spares):
        # dRAID names its spares draid<parity>-<top-level vdev>-<spare>; the pool has one vdev.
        spares = tuple(f"draid{draid_parity}-0-{index}" for index in range(len(failed)))
        rebuild = tuple(("zpool", "replace", "-s", pool, old, new) for old, new in zip(failed, spares))
        # Copied back onto a real disk: a healing resilver, after which the spare is free again.
        copy_back = (("zpool", "replace", pool, failed[0], spec.copy_back),) if spec.copy_back else ()
        return FaultPlan(spec=spec, kind="zfs", array=pool, failed=failed, replacements=(), fail=fail, rebuild=rebuild,
                         target=", ".join(spares) + " (distributed)", survives=survives, copy_back=copy_back,
                         copy_back_disk=spec.copy_back or "")
    replacements = spec.replacements()
    rebuild = tuple(("zpool", "replace", pool, old, new) for old, new in zip(failed, replacements))
    return FaultPlan(spec=spec, kind="zfs", array=pool, failed=failed, replacements=replacements, fail=fail,
                     rebuild=rebuild, target=", ".join(replacements) or "no replacement", survives=survives)


def btrfs_fault(spec: FaultSpec, *, mount_point: str, devices: tuple[str, ...], mount_options: tuple[str, ...],
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
    return FaultPlan(spec=spec, kind="btrfs", array=mount_point, failed=failed, replacements=replacements, fail=fail,
                     rebuild=rebuild, target=", ".join(replacements) or "no replacement", survives=survives,
                     member_ids=devids)


def minio_fault(spec: FaultSpec, *, drives: tuple[str, ...], devices: tuple[str, ...], stand_in: str,
                replacement_mkfs: tuple[Argv, ...], mount_options: tuple[str, ...], survives: int) -> FaultPlan:
    """MinIO erasure coding: `drives[i]` is the folder `devices[i]` is mounted on. A failed
    drive's folder gets an empty read-only tmpfs (`stand_in` its source name) mounted over it:
    MinIO finds a drive it cannot use, never a bare folder on the disk below (which an umount
    would leave it to write into), and what it had open on the old filesystem stays open. Each
    replacement is made (`replacement_mkfs`, in order) and mounted over the tmpfs, so there is
    no moment with neither, and MinIO's drive monitor heals it by itself.
    member_ids: the failed drives' numbers (d1 is 1), as the reader finds them."""
    failed = spec.failed(devices)
    numbers = tuple(devices.index(device) + 1 for device in failed)
    fail = tuple(("mount", "-t", "tmpfs", "-o", "ro,size=1m", stand_in, drives[n - 1]) for n in numbers)
    options = ("-o", ",".join(mount_options)) if mount_options else ()
    replacements = spec.replacements()
    rebuild = tuple(argv for number, new, mkfs in zip(numbers, replacements, replacement_mkfs)
                    for argv in (mkfs, ("mount", *options, new, drives[number - 1])))
    return FaultPlan(spec=spec, kind="minio", array=drives[0].rsplit("/", 1)[0], failed=failed,
                     replacements=replacements, fail=fail, rebuild=rebuild,
                     target=", ".join(replacements) or "no replacement", survives=survives, member_ids=numbers)
