"""Options of the commands that show a stored run again (`show`, `report`): what to work out."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from backupbench.schema import PositiveSize


class ShowOptions(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    backup_size: PositiveSize | None = Field(
        None, description="Add the backup windows for a full backup of this size, e.g. 10TiB.",
        json_schema_extra={"metavar": "SIZE", "example": "10TiB"},
    )
