"""An existing directory as a layout: nothing provisioned, nothing formatted, nothing undone."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from backupbench.layouts.actions import LayoutPlan
from backupbench.layouts.naming import Names
from backupbench.layouts.specs import NAME_PATTERN, Strict
from backupbench.schema import DirectoryPath


class ExistingDirectory(Strict):
    kind: Literal["directory"]
    name: str = Field(..., pattern=NAME_PATTERN, description="Short name.")
    path: DirectoryPath = Field(..., description="An existing directory (absolute path); nothing is provisioned or "
                                              "formatted.")

    @property
    def devices(self) -> tuple[str, ...]:
        return ()

    @property
    def minio(self) -> bool:
        return False  # MinIO would take over the user's directory

    def all_devices(self) -> tuple[str, ...]:
        return ()


def plan(spec: ExistingDirectory, names: Names) -> LayoutPlan:
    return LayoutPlan(spec.name, spec.kind, (), (), (), Path(spec.path))
