"""The keys naming the disk a restore's 'model' figures project onto (disk_model.py), shared by
every workload that restores (kb2014's restore operations, --workload restore): one flag each."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from backupbench import disk_model
from backupbench.schema import Duration, PositiveRate


class ModelDiskOptions(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    disk_speed: PositiveRate = Field(
        int(disk_model.DEFAULT_SPEED_BPS), description="Sequential speed of the disk the 'model' figures project each "
        "restore onto (a 7,200 rpm disk: about 250MB/s).", json_schema_extra={"metavar": "RATE"})
    disk_access_time: Duration = Field(
        disk_model.DEFAULT_ACCESS_S, gt=0, le=1, description="Time one jump costs on that disk (seek and half a "
        "turn: about 8ms at 7,200 rpm).", json_schema_extra={"metavar": "DURATION"})

    @property
    def model_disk(self) -> disk_model.ModelDisk:
        return disk_model.ModelDisk(float(self.disk_speed), self.disk_access_time)
