"""The recipe: devices x layouts x workloads, loaded from TOML and validated in one place."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from backupbench.recipe import reader
from backupbench.recipe.layouts import Layout
from backupbench.monitor.options import MonitorOptions
from backupbench.recipe.suite import SuiteOptions
from backupbench.schema import DevicePath
from backupbench.schema import shown, validate
from backupbench.workloads.s3 import S3Options, normalise_endpoint
from backupbench.workloads.smallfiles import PRESETS, SmallFilesSpec, with_preset


class Kb2014Workload(SuiteOptions):
    kind: Literal["kb2014"]


class FirstWriteWorkload(SuiteOptions):
    kind: Literal["first-write"]


class SmallFilesWorkload(SmallFilesSpec):
    kind: Literal["smallfiles"]
    preset: Literal["field-note-e", "quick"] | None = Field(
        None, description="Start from this preset; keys given beside it override it.")

    @model_validator(mode="before")
    @classmethod
    def _from_preset(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("preset") in PRESETS:
            return with_preset(data["preset"], data)
        return data


class S3Workload(S3Options):
    kind: Literal["s3"]
    endpoint: str | None = Field(None, description="S3 endpoint; unset: the MinIO that the layout serves.")
    bucket: str = Field("backupbench", description="Bucket; created (and removed when empty) for a layout's MinIO.")

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        return None if value is None else normalise_endpoint(value)


WorkloadSpec = Annotated[Union[Kb2014Workload, FirstWriteWorkload, SmallFilesWorkload, S3Workload],
                         Field(discriminator="kind")]
WORKLOAD_KINDS = ("kb2014", "first-write", "smallfiles", "s3")


class Recipe(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(..., min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$",
                      description="What this experiment is called.")
    description: str = Field("", max_length=10_000, description="What it answers.")
    devices: tuple[DevicePath, ...] = Field((), max_length=256,
                                            description="Every block device the recipe may format. A layout may "
                                                        "use only devices named here; each must hold nothing.")
    layout: tuple[Layout, ...] = Field(..., min_length=1, max_length=64,
                                       description="Layouts, built and measured one by one.")
    workload: tuple[WorkloadSpec, ...] = Field(..., min_length=1, max_length=64,
                                               description="Workloads run on every layout.")
    monitor: MonitorOptions = Field(default_factory=MonitorOptions, description="Monitor settings.")

    @model_validator(mode="after")
    def _consistent(self) -> "Recipe":
        names = [layout.name for layout in self.layout]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"layout names must be unique: {', '.join(duplicates)}")
        for workload in self.workload:
            if workload.kind == "s3" and workload.endpoint is None:
                unserved = [layout.name for layout in self.layout if not getattr(layout, "minio", False)]
                if unserved:
                    raise ValueError(f"an s3 workload without endpoint needs MinIO on every layout; "
                                     f"{', '.join(unserved)} has none (set minio = true, or give endpoint)")
        allowed = set(self.devices)
        for layout in self.layout:
            extra = [d for d in (*layout.devices, *getattr(layout, "special", ()), *getattr(layout, "log", ()))
                     if d not in allowed]
            if extra:
                raise ValueError(f"layout {layout.name!r} uses {', '.join(extra)}, which [devices] does not name; "
                                 "add it there to allow backupbench to format it")
        return self


# Lists whose entries are a union picked by `kind`: pydantic puts the kind into the error's
# location right after the index, where the user wrote no such key.
_TAGGED_LISTS = ("layout", "workload")


def _key_path(location: tuple) -> str:
    """('layout', 1, 'lvm-striped', 'stripes') -> 'layout[1].stripes'."""
    parts: list[str] = []
    for position, item in enumerate(location):
        if isinstance(item, int):
            parts[-1:] = [f"{parts[-1]}[{item}]" if parts else f"[{item}]"]
        elif position >= 2 and isinstance(location[position - 1], int) and location[position - 2] in _TAGGED_LISTS:
            continue  # the union's tag, not a key the user wrote
        else:
            parts.append(_key_text(str(item)))
    return ".".join(parts) or "recipe"


def _key_text(key: str) -> str:
    """A key as TOML writes it: bare when it can be, else quoted (and cut short)."""
    if re.fullmatch(r"[A-Za-z0-9_-]+", key):
        return key
    return shown(key)


def _known_keys(model: type[BaseModel]) -> list[str]:
    return list(model.model_fields)


def _suggestion(error: dict[str, Any]) -> str:
    if error.get("type") != "extra_forbidden":
        return ""
    key = str(error["loc"][-1])
    candidates: list[str] = []
    from backupbench.recipe import layouts as layout_models

    for model in (Recipe, MonitorOptions, SuiteOptions, SmallFilesSpec, S3Options, layout_models.FilesystemSpec,
                  *[m for m in vars(layout_models).values() if isinstance(m, type) and issubclass(m, layout_models.Strict)]):
        candidates += _known_keys(model)
    close = difflib.get_close_matches(key, sorted(set(candidates)), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def parse(data: dict[str, Any], source: str = "recipe") -> Recipe:
    return validate(Recipe, data, _key_path, _suggestion, source, "see examples/ for working recipes")


def load(path: Path) -> Recipe:
    """Read, parse and validate a recipe file; RecipeError (one line) on any problem."""
    return parse(reader.load_toml(path), str(path))
