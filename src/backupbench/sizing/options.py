"""Options of `backupbench size ...`, each defined once: the click flags and their help are
derived from these fields (cli.options.click_options), values are validated here.

Bounds are physical: counts are whole numbers (schema.Count), a disk at least the smallest every
layout kind is built on (recipe/policy.DiskSize), a rate above 0 B/s, a factor finite and at
most MAX_FACTOR (an infinite or 1e308 factor overflowed the exact arithmetic into an internal
error)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from backupbench import units
from backupbench.errors import InputError
from backupbench.recipe.policy import DiskSize
from backupbench.schema import Count, Duration, Percent, PositiveRate, Rate, Size, comma_list  # noqa: F401  (Percent, Rate: the calculators' field types)
import backupbench.sizing.capacity as cap
from backupbench.layout_model import BTRFS_PROFILES
from backupbench.sizing.percent import parse_percent, percent_of

def parse_size_or_percent(text: str) -> str:
    """'10GB' or '10%' as given, once it is known to parse as one of them."""
    text = str(text).strip()
    if text.endswith("%"):
        parse_percent(text)
    else:
        units.parse_size(text)
    return text


BTRFS_METADATA = tuple(BTRFS_PROFILES)

# Field note E's factors are 1.5-2.0 and 1.3-1.5, and no snapshot needs more than a copy of its
# whole origin: a factor of 100 is far past any use, yet keeps the sizes within what a float holds.
MAX_FACTOR = 100.0

Sizes = Annotated[tuple[Size, ...], BeforeValidator(comma_list)]
DiskSizes = Annotated[tuple[DiskSize, ...], BeforeValidator(comma_list)]
Names = Annotated[tuple[str, ...], BeforeValidator(comma_list)]


class _Options(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)


class LayoutOptions(_Options):
    """A disk layout: which layout, which disks, and the parameters of its kind."""

    # Layout-specific options that every layout accepts (none for capacity).
    ALWAYS_APPLICABLE: ClassVar[frozenset[str]] = frozenset()

    layout: Names = Field(
        ..., min_length=1,
        description="Layout, or several comma-separated to compare: " + ", ".join(cap.LAYOUTS)
        + "; or a zpool dRAID spec such as draid2:3d:45c:2s.",
        json_schema_extra={"metavar": "LAYOUT[,LAYOUT...]"},
    )
    disks: Count | None = Field(
        None, ge=1, le=100_000,
        description="Number of disks (may be left out when --disk-size lists every disk, or a dRAID spec gives c).",
        json_schema_extra={"metavar": "N"},
    )
    disk_size: DiskSizes = Field(
        ..., min_length=1,
        description="Size of each disk (6TB is decimal, 6TiB binary), or one size per disk, comma-separated, "
        "when they differ.",
        json_schema_extra={"metavar": "SIZE[,SIZE...]"},
    )
    stripes: Count | None = Field(None, ge=2, description="lvm-striped: number of stripes (-i) [default: one per disk].",
                                  json_schema_extra={"metavar": "N"})
    vdevs: Count | None = Field(None, ge=1, description="raidz: split the disks evenly into this many raidz vdevs "
                                                       "[default: 1].", json_schema_extra={"metavar": "N"})
    draid_data: Count | None = Field(None, ge=1, description="dRAID: data disks per redundancy group (d) "
                                                            "[default: zpool's, 8 or fewer].",
                                     json_schema_extra={"metavar": "D"})
    draid_spares: Count | None = Field(None, ge=0, description="dRAID: distributed spares (s) [default: 0; rebuild "
                                                              "compares other layouts with 1].",
                                       json_schema_extra={"metavar": "S"})
    set_size: Count | None = Field(None, ge=1, le=16, description="minio-ec: drives per erasure set [default: as "
                                                                 "MinIO picks, the largest from 2 to 16 dividing the "
                                                                 "drive count].", json_schema_extra={"metavar": "N"})
    parity: Count | None = Field(None, ge=0, le=8, description="minio-ec: parity drives per set, EC:N [default: "
                                                              "MinIO's for the set size: EC:2 for 4-5, EC:3 for 6-7, "
                                                              "EC:4 for 8-16].", json_schema_extra={"metavar": "N"})

    filesystem: Literal["xfs", "ext4", "none"] | None = Field(
        None, description="md, lvm, minio-ec: the filesystem on the array, the LV or each drive, whose own space "
        "is counted as its mkfs and the kernel count it; none: the bare array or LV [default: xfs, as a recipe's "
        "layouts].", json_schema_extra={"metavar": "xfs|ext4|none"})
    btrfs_metadata: Literal[BTRFS_METADATA] | None = Field(  # type: ignore[valid-type]
        None, description="btrfs: the metadata profile (mkfs.btrfs -m); the layout survives no more failed devices "
        "than it does [default: mkfs.btrfs's, raid1 on two devices or more].",
        json_schema_extra={"metavar": "PROFILE"})
    ashift: Count | None = Field(None, ge=9, le=16, description="raidz, dRAID: the pool's sector size as a power of "
                                                               "two [default: 12, 4 KiB sectors].",
                                 json_schema_extra={"metavar": "N"})
    recordsize: Size | None = Field(None, description="raidz, dRAID: the datasets' recordsize, a power of two from "
                                                      "4 KiB to 16 MiB: ZFS reports space as if every block were "
                                                      "128 KiB, and other records hold more or less of it "
                                                      "[default: 128KiB].", json_schema_extra={"metavar": "SIZE"})

    @field_validator("recordsize")
    @classmethod
    def _recordsize(cls, value: int | None) -> int | None:
        if value is not None and (value < 4096 or value > 16 * units.MiB or value & (value - 1)):
            raise ValueError(f"must be a power of two from 4 KiB to 16 MiB (zfs recordsize), not {value:,} bytes")
        return value

    @field_validator("layout")
    @classmethod
    def _known(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            if not cap.is_layout_name(name):
                raise ValueError(f"{name!r} is not a layout: use one of {', '.join(cap.LAYOUTS)}, "
                                 "or a zpool dRAID spec such as draid2:3d:45c:2s")
        return names

    def disk_sizes(self, layout: str) -> tuple[int, ...]:
        if len(self.disk_size) > 1:
            if self.disks is not None and self.disks != len(self.disk_size):
                raise InputError(f"--disks {self.disks} but --disk-size lists {len(self.disk_size)} sizes",
                                 "give one size for all disks, or one per disk")
            return self.disk_size
        count = self.disks
        if count is None and cap.layout_family(layout) == "draid":
            count = cap.parse_draid(layout)[1].get("c")
        if count is None:
            raise InputError("--disks: how many disks?", "e.g. --disks 16 --disk-size 6TB")
        return self.disk_size * count

    def specs(self) -> list[cap.LayoutSpec]:
        """One LayoutSpec per layout. With one layout, an option of another kind is an error;
        comparing several, each option goes to the layouts it belongs to (and must fit one)."""
        specific = {"stripes": self.stripes, "vdevs": self.vdevs, "draid_data": self.draid_data,
                    "draid_spares": self.draid_spares, "set_size": self.set_size, "parity": self.parity,
                    "filesystem": self.filesystem, "btrfs_metadata": self.btrfs_metadata, "ashift": self.ashift,
                    "recordsize": self.recordsize}
        given = {name: value for name, value in specific.items() if value is not None}
        specs = []
        for layout in self.layout:
            kept = dict(given)
            if len(self.layout) > 1:
                kept = {name: value for name, value in given.items()
                        if name in self.ALWAYS_APPLICABLE or cap.option_applies(name, layout)}
            specs.append(cap.LayoutSpec(layout, self.disk_sizes(layout), **kept))
        for name in given:
            if name not in self.ALWAYS_APPLICABLE and not any(cap.option_applies(name, s.layout) for s in specs):
                raise InputError(f"--{name.replace('_', '-')} does not apply to {', '.join(self.layout)}",
                                 "drop it, or add the layout it belongs to")
        return specs


class CapacityOptions(LayoutOptions):
    pass


class RebuildOptions(LayoutOptions):
    # On a layout other than dRAID, --draid-data/--draid-spares shape the dRAID it is compared with.
    ALWAYS_APPLICABLE: ClassVar[frozenset[str]] = frozenset({"draid_data", "draid_spares"})

    layout: Names | None = Field(
        None, min_length=1,
        description="Layout, or several comma-separated to compare: " + ", ".join(cap.LAYOUTS)
        + "; or a zpool dRAID spec such as draid2:3d:45c:2s [default with --from-run: the layouts measured].",
        json_schema_extra={"metavar": "LAYOUT[,LAYOUT...]"},
    )
    disk_size: DiskSizes | None = Field(
        None, min_length=1,
        description="Size of each disk (6TB is decimal, 6TiB binary), or one size per disk, comma-separated "
        "[default with --from-run: the disks measured].", json_schema_extra={"metavar": "SIZE[,SIZE...]"},
    )
    rebuild_rate: PositiveRate | None = Field(
        None, description="Rebuild rate of one disk (e.g. 100MB/s decimal, 100MiB/s binary): what a disk "
        "sustains while rebuilding.", json_schema_extra={"metavar": "RATE"},
    )
    from_run: str | None = Field(
        None, description="Use the rebuild rates a fault run measured (idle and under the workloads), per "
        "disk as the model counts them: an id, a unique prefix, or 'latest'.", json_schema_extra={"metavar": "RUN"})
    used: Percent | None = Field(
        None, gt=0, le=100, description="How full the layout is: ZFS, btrfs and MinIO rebuild only allocated data "
        "(md always the whole disk) [default: 100%].", json_schema_extra={"metavar": "PERCENT"},
    )

    @model_validator(mode="after")
    def _one_rate(self) -> "RebuildOptions":
        if self.rebuild_rate is None and self.from_run is None:
            raise ValueError("size rebuild needs --rebuild-rate or --from-run")
        if self.rebuild_rate is not None and self.from_run is not None:
            raise ValueError("--rebuild-rate and --from-run both give the rate: choose one")
        if self.from_run is None and (self.layout is None or self.disk_size is None):
            raise ValueError("size rebuild needs --layout and --disk-size (or --from-run RUN)")
        if self.layout is not None and self.disk_size is None:
            raise ValueError("--layout needs --disk-size")
        return self


class SnapshotOptions(_Options):
    origin: Size = Field(..., description="Size of the origin LV.", json_schema_extra={"metavar": "SIZE"})
    change: Annotated[str, BeforeValidator(parse_size_or_percent)] = Field(
        ..., description="Data expected to change while the snapshot exists: a size (10GB) or a share of the "
        "origin (10%).", json_schema_extra={"metavar": "SIZE|PERCENT"},
    )
    snapshots: Count = Field(1, ge=1, le=64, description="Number of classic snapshots of the origin at once.",
                             json_schema_extra={"metavar": "N"})
    factor_low: float = Field(1.5, gt=0, le=MAX_FACTOR,
                              description="Low end of the change factor (base = change x factor).",
                              json_schema_extra={"metavar": "X"})
    factor_high: float = Field(2.0, gt=0, le=MAX_FACTOR, description="High end of the change factor.",
                               json_schema_extra={"metavar": "X"})
    margin_low: float = Field(1.3, ge=0, le=MAX_FACTOR,
                              description="Low end of the margin factor (margin = base x factor).",
                              json_schema_extra={"metavar": "X"})
    margin_high: float = Field(1.5, ge=0, le=MAX_FACTOR, description="High end of the margin factor.",
                               json_schema_extra={"metavar": "X"})

    def change_bytes(self) -> int:
        if self.change.endswith("%"):
            percent = parse_percent(self.change)
            if not 0 < percent <= 100:
                raise InputError(f"--change {self.change}: a share of the origin must be above 0% and at most 100%")
            return percent_of(self.origin, percent)
        return units.parse_size(self.change)


class WindowOptions(_Options):
    backup_size: Size = Field(..., description="Size of a full backup.",
                              json_schema_extra={"metavar": "SIZE"})
    speed: PositiveRate | None = Field(None, description="Effective speed of the backup job (e.g. 200MiB/s).",
                               json_schema_extra={"metavar": "RATE"})
    change_rate: Percent | None = Field(None, gt=0, le=100,
                                        description="Share of the full that changes between backups: adds "
                                                    "the incremental's window.",
                                        json_schema_extra={"metavar": "PERCENT"})
    window: Duration | None = Field(None, gt=0, description="Backup window (e.g. 8h): prints the speed it needs.",
                                    json_schema_extra={"metavar": "DURATION"})
    from_run: str | None = Field(None, description="Use a stored run's measured effective speeds (an id, a unique "
                                                   "prefix, or 'latest').", json_schema_extra={"metavar": "RUN"})
