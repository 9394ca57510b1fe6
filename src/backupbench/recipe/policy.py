"""A backup policy as data: what a repository must hold, how fast, and on which disks.

Each requirement is one pydantic field (type, default, help); the method and retention fields
are retention.RetentionPolicy's, whose rules the aging workload plays too. The same fields are
a recipe's [policy] table (`PolicyTable`, composed by recipe/model.py) and the flags of
`backupbench size repository` (sizing/policy.py's RepositoryOptions, via cli/options.py): one
model, two spellings. It lives here, not in sizing/, because the recipe (stage 3) reads it and may not
import a later stage. Sizes are exact integer bytes, percentages as typed ('5%' or 5).

Beyond each field's own range, `contradiction` finds what contradicts itself:

- GFS needs periodic fulls (the retention rules' own: retention.gfs_contradiction, which the
  aging workload refuses with the same line). A weekly, monthly or yearly GFS restore point is
  a *full* backup kept longer (Veeam flags a full of that week, month or year; it makes no extra
  file for it). forward-active and forward-synthetic make a full every week, so any GFS count
  goes with them, monthlies without weeklies included (the month's first weekly full is
  flagged). forever-forward and reverse-incremental never make a periodic full, so they have
  nothing to flag: any GFS count with them is refused (Veeam's user guide: GFS applies to a
  forever-forward chain only if fulls are made by hand or by a script).
- An RTO is an objective for a restore of some size: an RTO needs a restore size.

The data reduction (compression and deduplication) is a given ratio today, 2:1 by default (Veeam's
sizing guidance: "usually 2:1 or more ... be conservative").

Physical bounds: a count is a whole number, block clone true or false (schema.Count, Flag), a
speed above 0 B/s, and a disk at least MIN_DISK_SIZE: 300 MiB, the smallest disk on which
every layout kind `size` models can be built. The most demanding is minio-ec, whose every drive
holds its own filesystem, XFS by default, and mkfs.xfs (xfsprogs 5.19 and later) refuses one
under 300 MiB; mkfs.btrfs (btrfs-progs 6.2) refuses a device under 114,294,784 bytes, zpool
one under 64 MiB (SPA_MINDEVSIZE), pvcreate one under 2 MiB (pv_min_size). The capacity model
subtracts none of the layouts' own metadata, which is right only while a disk dwarfs it; on a
disk of 1 B it planned "943749999999900% over its limit". One bound for every kind, because it
is a field's (the flags' and the [policy] table's alike), checked before the layouts are known.
"""

from __future__ import annotations

from typing import Annotated, Callable, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from backupbench import units
from backupbench.retention import (METHODS, PERIODIC_FULLS, TRANSFORMS, Method,  # noqa: F401
                                   RetentionPolicy, flag, gfs_contradiction, key)
from backupbench.schema import Count, Duration, Flag, Percent, PositiveRate, PositiveSize, Ratio, parse_ratio  # noqa: F401

DEFAULT_REDUCTION = 2.0

MIN_DISK_SIZE = 300 * units.MiB


def _buildable(value: int) -> int:
    if value < MIN_DISK_SIZE:
        raise ValueError(f"a disk of {units.format_size(value)} is too small to build every layout kind on: at least "
                         f"{units.format_size(MIN_DISK_SIZE)} (mkfs.xfs's smallest, for each MinIO drive; btrfs needs "
                         "109 MiB, ZFS 64 MiB); give the disks' size as sold, e.g. 16TB")
    return value


# A disk a layout is planned on (see the module doc for the bound).
DiskSize = Annotated[PositiveSize, AfterValidator(_buildable)]


class _Model(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)


class _Scale(_Model):
    """What the backups protect and how much of it they store (first among the policy's fields)."""

    protected: PositiveSize = Field(
        ..., description="Protected data: what the backups read (used, not provisioned), e.g. 50TB.",
        json_schema_extra={"metavar": "SIZE"})
    change_rate: Percent = Field(
        ..., gt=0, le=100, description="Share of the protected data that changes each day (typically 2% to 5%; "
        "databases more).", json_schema_extra={"metavar": "PERCENT"})
    reduction: Ratio = Field(
        DEFAULT_REDUCTION, ge=1, le=100, description="Data reduction of the backups (compression and "
        "deduplication): 2:1 stores half the data.", json_schema_extra={"metavar": "RATIO"})


class BackupPolicy(RetentionPolicy, _Scale):
    """What the repository must hold and how fast: the requirements of a repository plan."""

    window: Duration = Field(
        8 * 3600.0, gt=0, le=86_400, description="Backup window: the longest a day's backup job (and its "
        "synthetic full or merge) may take, e.g. 8h.", json_schema_extra={"metavar": "DURATION"})
    restore_size: PositiveSize | None = Field(
        None, description="Size of the restore the RTO is for (protected data, before reduction), e.g. 2TB.",
        json_schema_extra={"metavar": "SIZE"})
    rto: Duration | None = Field(
        None, gt=0, description="Restore-time objective for --restore-size, e.g. 4h: met if even the fully "
        "fragmented restore finishes within it.", json_schema_extra={"metavar": "DURATION"})
    growth: Percent = Field(0.0, ge=0, le=1_000, description="Yearly growth of the protected data.",
                            json_schema_extra={"metavar": "PERCENT"})
    horizon: Count = Field(3, ge=1, le=30, description="Planning horizon in years: the repository must hold the "
                           "policy for the grown data at its end.", json_schema_extra={"metavar": "YEARS"})
    workspace: Percent = Field(
        10.0, ge=0, le=100, description="Free space kept on top of the restore points, as a share of them: "
        "temporary files, retried jobs, one-off fulls, the filesystem's own headroom.",
        json_schema_extra={"metavar": "PERCENT"})
    rebuild_limit: Duration | None = Field(
        None, gt=0, description="Longest a disk failure may leave the layout with reduced redundancy "
        "(the rebuild), e.g. 12h [default: not a requirement].", json_schema_extra={"metavar": "DURATION"})


class DiskModel(_Model):
    """What one candidate disk does, for the per-disk model when speeds are not measured."""

    disk_speed: PositiveRate | None = Field(
        None, description="Sequential speed of one disk (e.g. 250MB/s for a 7,200 rpm disk): the per-disk "
        "model's speeds, labelled 'model' [needed unless --from-run measured every operation].",
        json_schema_extra={"metavar": "RATE"})
    disk_access_time: Duration = Field(
        0.008, gt=0, le=1, description="Time one random I/O waits before it moves data: a 7,200 rpm disk about "
        "8 ms (4.2 ms half a turn + the seek), an SSD about 0.1ms.", json_schema_extra={"metavar": "DURATION"})
    rebuild_rate: PositiveRate | None = Field(
        None, description="Rebuild rate of one disk [default: a fault run's measured rate when --from-run has "
        "one, else --disk-speed].", json_schema_extra={"metavar": "RATE"})
    afr: Percent | None = Field(
        None, gt=0, le=100, description="Annual failure rate of one disk (e.g. 1%): adds the chance that "
        "another disk fails during the rebuild.", json_schema_extra={"metavar": "PERCENT"})
    no_scale: Flag = Field(
        False, description="Take speeds a run measured on another number of disks as measured, labelled "
        "'measured on N, not scaled', instead of scaling them to the planned disks through the per-disk model.")


def contradiction(policy: BackupPolicy, spelled: Callable[..., str] = flag) -> tuple[str, str] | None:
    """(problem, fix) when the policy contradicts itself, named as `spelled` writes a field (the
    retention rules' own contradiction first: retention.gfs_contradiction)."""
    found = gfs_contradiction(policy, spelled)
    if found is not None:
        return found
    if policy.rto is not None and policy.restore_size is None:
        return (f"{spelled('rto')} needs {spelled('restore_size')}: the size of the restore it is for",
                f"e.g. {spelled('restore_size', '2TB')} {spelled('rto', '4h')}")
    return None


_Given = TypeVar("_Given", bound=BaseModel)


def given_fields(source: BaseModel, model: type[_Given]) -> _Given:
    """`model` made of only the fields `source` was given: the rest keep `model`'s defaults
    (a table or the flags that set a few fields leave the others to the policy's own)."""
    return model.model_validate({name: getattr(source, name) for name in model.model_fields
                                 if name in source.model_fields_set})


class PolicyTable(DiskModel, BackupPolicy):
    """A recipe's [policy]: the policy, and the disks its layouts are planned on (the lab's
    layouts measured on small disks; the plan is for the repository's own)."""

    disks: Count = Field(..., ge=2, le=100_000, description="Disks each of the recipe's layouts is planned on.",
                         json_schema_extra={"metavar": "N"})
    disk_size: DiskSize = Field(..., description="Size of each planned disk, e.g. 16TB.",
                                json_schema_extra={"metavar": "SIZE"})

    @model_validator(mode="after")
    def _consistent(self) -> "PolicyTable":
        found = contradiction(self, key)
        if found is not None:
            raise ValueError(f"{found[0]} ({found[1]})")
        return self

    def policy(self) -> BackupPolicy:
        return given_fields(self, BackupPolicy)

    def disk(self) -> DiskModel:
        return given_fields(self, DiskModel)
