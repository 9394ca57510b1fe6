"""The recipe: devices x layouts x workloads, loaded from TOML and validated in one place."""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from backupbench.errors import RecipeError
from backupbench.recipe.layouts import LAYOUT_KINDS, Layout
from backupbench.recipe.monitor import MonitorOptions
from backupbench.recipe.suite import SuiteOptions
from backupbench.workloads.s3 import S3Options, normalise_endpoint
from backupbench.workloads.smallfiles import PRESETS, SmallFilesSpec


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
        if isinstance(data, dict) and data.get("preset"):
            base = PRESETS.get(data["preset"])
            if base is not None:
                return {**base.model_dump(), **data}
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

    name: str = Field(..., description="What this experiment is called.")
    description: str = Field("", description="What it answers.")
    devices: tuple[str, ...] = Field((), description="Every block device the recipe may format. A layout may "
                                                     "use only devices named here; each must hold nothing.")
    layout: tuple[Layout, ...] = Field(..., min_length=1, description="Layouts, built and measured one by one.")
    workload: tuple[WorkloadSpec, ...] = Field(..., min_length=1, description="Workloads run on every layout.")
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


def _key_path(location: tuple) -> str:
    """('layout', 1, 'lvm-striped', 'stripes') -> 'layout[1].stripes'."""
    parts: list[str] = []
    for item in location:
        if isinstance(item, int):
            parts[-1] = f"{parts[-1]}[{item}]" if parts else f"[{item}]"
        elif item in LAYOUT_KINDS or item in WORKLOAD_KINDS:
            continue  # the union's tag, not a key the user wrote
        else:
            parts.append(str(item))
    return ".".join(parts) or "recipe"


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
    try:
        return Recipe.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        if error.get("type") == "extra_forbidden":
            message = "is not a known key"
        elif error.get("type") == "union_tag_invalid":
            ctx = error.get("ctx") or {}
            message = f"kind {ctx.get('tag')!r} is not one of {ctx.get('expected_tags')}"
        elif error.get("type") == "literal_error":
            message = f"must be one of {(error.get('ctx') or {}).get('expected')}"
        raise RecipeError(f"{source}: {_key_path(tuple(error['loc']))}: {message}{_suggestion(error)}",
                          "see examples/ for working recipes") from exc


def load(path: Path) -> Recipe:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise RecipeError(f"recipe {path} does not exist", "give the path of a .toml recipe, e.g. examples/") from None
    except OSError as exc:
        raise RecipeError(f"cannot read recipe {path}: {exc.strerror}") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RecipeError(f"{path}: not valid TOML: {exc}", "check the line it names") from exc
    return parse(data, str(path))
