"""`fault = {...}` on a layout: which member fails, what replaces it, and how the rebuild is
loaded. The key alone is checked here (at least one member, md's speed limits in range); the
rules against the layout it sits on (its redundancy, its members, its kind) are in rules.py."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BeforeValidator, Field, PlainSerializer, field_validator

from backupbench import units
from backupbench.schema import Count, DevicePath, Duration, Flag, Size
from pydantic import BaseModel, ConfigDict

# The dRAID distributed spare (draid<p>-<vdev>-<n>) instead of a disk.
DISTRIBUTED_SPARE = "spare"
RebuildLoad = Literal["once", "repeat", "none"]
# md's sysctls are in KiB/s; the kernel takes at most INT_MAX.
MD_SPEED_LIMIT_MAX_KIB = 2**31 - 1
Rate = Annotated[int, BeforeValidator(units.parse_rate), PlainSerializer(int)]


def _as_tuple(value: object) -> object:
    return (value,) if isinstance(value, str) else value


Devices = Annotated[tuple[DevicePath, ...], BeforeValidator(_as_tuple)]


class FaultSpec(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    fail: Union[Count, Devices] = Field(..., description="The member(s) to fail: device path(s) of the layout, or a "
                                                         "count (that many of its last devices).")
    replace: Union[Literal["spare"], Devices, None] = Field(
        None, description="What the rebuild goes onto: device path(s) from [devices] the layout does not use "
                          "(one per failed member), or 'spare' for a dRAID distributed spare [default: 'spare' on a "
                          "dRAID with spares, else none: the array is measured degraded only].")
    copy_back: DevicePath | None = Field(
        None, description="dRAID only: once the distributed spare has rebuilt, replace the failed member with "
                          "this disk from [devices] (the spare's data copied back onto a real disk), timed idle.")
    after: Duration = Field(0.0, ge=0, description="Least time the healthy array runs the workloads before the "
                                                   "failure [default: one pass of the workloads].")
    rebuild_load: RebuildLoad = Field(
        "once", description="During the rebuild: 'once' (one pass of the workloads, then the rebuild ends idle: "
                            "its speed with and without load), 'repeat' (the workloads until the rebuild ends), "
                            "'none' (an idle rebuild, its own speed).")
    fill: Size = Field(0, description="Data written to the layout before the failure, e.g. '512MiB': ZFS, btrfs "
                                      "and MinIO rebuild only what is allocated (md rebuilds every member in full).")
    speed_limit_min: Rate | None = Field(None, description="md only: /proc/sys/dev/raid/speed_limit_min during the "
                                                            "run, e.g. '1MiB/s' (restored afterwards).")
    speed_limit_max: Rate | None = Field(None, description="md only: /proc/sys/dev/raid/speed_limit_max during the "
                                                            "run, e.g. '20MiB/s' (restored afterwards).")
    member_runtime: Duration = Field(5.0, ge=1, description="How long fio reads one member, then writes it, "
                                                             "before the layout is built: the single-disk "
                                                             "reference the rebuild model starts from.")
    rebuild_timeout: Duration = Field(4 * 3600.0, gt=0, description="Give up waiting for the rebuild after this "
                                                                    "long (the layout is torn down all the same).")
    allow_data_loss: Flag = Field(False, description="Allow failing more members than the parity survives "
                                                     "(only in the lab VM, on a throwaway layout).")

    @field_validator("fail")
    @classmethod
    def _some(cls, value: int | tuple[str, ...]) -> int | tuple[str, ...]:
        if isinstance(value, int) and value < 1:
            raise ValueError("fail: at least 1 member")
        if isinstance(value, tuple) and not value:
            raise ValueError("fail: name at least one member")
        return value

    @field_validator("speed_limit_min", "speed_limit_max")
    @classmethod
    def _kib(cls, value: int | None) -> int | None:
        if value is not None and not 1024 <= value <= MD_SPEED_LIMIT_MAX_KIB * 1024:
            raise ValueError("an md speed limit is from 1KiB/s to 2TiB/s (the sysctl is in KiB/s)")
        return value

    def failure_count(self) -> int:
        return self.fail if isinstance(self.fail, int) else len(self.fail)

    def failed(self, devices: tuple[str, ...]) -> tuple[str, ...]:
        """The members that fail, in order."""
        if isinstance(self.fail, int):
            return devices[len(devices) - self.fail:] if self.fail <= len(devices) else devices
        return self.fail

    def replacements(self) -> tuple[str, ...]:
        """Disks the rebuild writes to (not the distributed spare)."""
        return () if self.replace in (None, DISTRIBUTED_SPARE) else self.replace  # type: ignore[return-value]

    def disks_written(self) -> tuple[str, ...]:
        """Every disk besides the members the fault writes to: replacements and the copy-back disk."""
        return (*self.replacements(), *((self.copy_back,) if self.copy_back else ()))


def onto_distributed_spare(fault: FaultSpec, draid_parity: int | None, distributed_spares: int) -> bool:
    """The rebuild goes onto a dRAID distributed spare: asked for, or by default on a dRAID with spares."""
    return fault.replace == DISTRIBUTED_SPARE or (fault.replace is None and draid_parity is not None
                                                  and distributed_spares > 0)
