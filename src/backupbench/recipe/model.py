"""The recipe: devices x layouts x workloads, loaded from TOML and validated in one place.

A recipe composes what the layouts and workloads define: a [[layout]] entry is the spec its
`kind` names (layouts/registry.py), a [[workload]] entry the options of its workload
(workloads/registry.py), [monitor] the monitor's options, [hosts] the other machines its
workloads run on instead of layouts built here (recipe/hosts.py), [policy] the backup policy
its layouts are planned for (recipe/policy.py, the fields of `size repository`'s flags).
Nothing here defines an option of its own but the recipe's name, description and device list.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import BaseModel, ConfigDict, Field, field_serializer, model_validator

from backupbench.errors import RecipeError
from backupbench.layouts.registry import LayoutSpec
from backupbench.monitor.options import MonitorOptions
from backupbench.recipe import keys, reader
from backupbench.recipe.hosts import HostsSpec, workload_refusal
from backupbench.recipe.policy import PolicyTable
from backupbench.schema import TYPED, DevicePath, key_error_at, shown, validate
from backupbench.workloads import sweep
from backupbench.workloads.registry import WORKLOADS

WorkloadSpec = Annotated[Union[tuple(d.recipe_entry for d in WORKLOADS.values())], Field(discriminator="kind")]


class Recipe(BaseModel):
    # A recipe may hold S3 keys: pydantic's own message (a --debug traceback) must not quote them.
    # defer_build, here and on every model: a validator is built when first used, not at import
    # (a command builds only the ones it uses; under the lab's TCG each import costs ~30x;
    # tests/unit/test_architecture.py holds every model to it).
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, hide_input_in_errors=True)

    name: str = Field(..., min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$",
                      description="What this experiment is called.")
    description: str = Field("", max_length=10_000, description="What it answers.")
    devices: tuple[DevicePath, ...] = Field((), max_length=256,
                                            description="Every block device the recipe may format. A layout may "
                                                        "use only devices named here; each must hold nothing.")
    layout: tuple[LayoutSpec, ...] = Field((), max_length=64,
                                           description="Layouts, built and measured one by one (with repeats, those "
                                                       "on devices of their own alternate); none with [hosts].")
    hosts: HostsSpec | None = Field(None, description="Other machines the workloads run on, instead of layouts.")
    workload: tuple[WorkloadSpec, ...] = Field(..., min_length=1, max_length=64,
                                               description="Workloads run on every layout (or on the hosts).")
    monitor: MonitorOptions = Field(default_factory=MonitorOptions, description="Monitor settings.")
    policy: PolicyTable | None = Field(None, description="A backup policy: the repository plan of the layouts "
                                       "(`size repository --recipe`, and `report` of a run).")

    @field_serializer("policy")
    def _policy_as_written(self, policy: PolicyTable | None) -> dict[str, Any] | None:
        # A run stores its recipe dumped; the plan rebuilt from it must still tell a default
        # (say, the 2:1 reduction) from a value the user wrote, so only written fields are kept.
        return None if policy is None else policy.model_dump(mode="json", exclude_unset=True)

    @model_validator(mode="after")
    def _consistent(self) -> "Recipe":
        _check_sweeps(self.workload, hosts=self.hosts is not None)
        if self.hosts is not None:
            self._check_hosts(self.hosts)
            return self
        if not self.layout:
            raise ValueError("no [[layout]]: a recipe builds at least one, or runs on other machines ([hosts])")
        names = [layout.name for layout in self.layout]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"layout names must be unique: {', '.join(duplicates)}")
        for workload in self.workload:
            if WORKLOADS[workload.kind].served_by_layout(workload):
                unserved = [layout.name for layout in self.layout if not layout.minio]
                if unserved:
                    raise ValueError(f"a {workload.kind} workload without endpoint needs MinIO on every layout; "
                                     f"{', '.join(unserved)} has none (set minio = true, or give endpoint)")
        allowed = set(self.devices)
        for layout in self.layout:
            extra = [d for d in layout.all_devices() if d not in allowed]
            if extra:
                raise ValueError(f"layout {layout.name!r} uses {', '.join(extra)}, which [devices] does not name; "
                                 "add it there to allow backupbench to format it")
        return self

    def _check_hosts(self, hosts: HostsSpec) -> None:
        """backupbench builds nothing on another machine: no layouts, no devices to format."""
        if self.layout:
            raise ValueError("[hosts] and [[layout]] do not go together: [hosts] runs the workloads on other "
                             "machines, a layout is built here; remove one (or write two recipes)")
        if self.policy is not None:
            raise ValueError("[policy] plans a repository on the recipe's layouts, and [hosts] builds none: "
                             "remove [policy] (or give it to a recipe with layouts)")
        if self.devices:
            raise ValueError("[hosts] formats nothing: remove devices (it names what a layout may format)")
        for index, entry in enumerate(self.workload):
            refusal = workload_refusal(entry, hosts)
            if refusal:
                raise ValueError(f"workload[{index}]: {refusal}")


def _check_sweeps(entries: tuple[Any, ...], hosts: bool) -> None:
    """Each entry's `sweep` against its own options (workloads/sweep.py): refused at its key,
    `workload[0].sweep.iodepth`, as any other key's value is."""
    for index, entry in enumerate(entries):
        if entry.sweep is None:
            continue
        try:
            if hosts:
                raise sweep.SweepRefused("[hosts] recipes do not sweep: a sweep runs on the recipe's layouts "
                                         "(or use `backupbench sweep` on one host)")
            sweep.check_entry(entry, WORKLOADS[entry.kind], {name: d.options for name, d in WORKLOADS.items()})
        except sweep.SweepRefused as refused:
            where = ("sweep", refused.where) if refused.where else ("sweep",)
            raise key_error_at(("workload", index, entry.kind, *where), str(refused), entry.sweep) from None


_FIX = "see examples/ for working recipes"


def parse(data: dict[str, Any], source: str = "recipe") -> Recipe:
    dated = keys.first_date(data)
    if dated is not None:  # pydantic would show it as datetime.date(...), a Python repr
        location, value = dated
        raise RecipeError(f"{source}: {keys.key_path(location, tagged=False)}: {shown(value)} is a TOML date or "
                          "time, which no recipe key takes (if it is text, put it in quotes)", _FIX)
    return validate(Recipe, data, keys.key_path, suggest=lambda error: keys.suggestion(Recipe, error), source=source,
                    fix=_FIX, choose=lambda errors: keys.misspelt_required(Recipe, errors), context={TYPED: True})


def load(path: Path) -> Recipe:
    """Read, parse and validate a recipe file; RecipeError (one line) on any problem."""
    return parse(reader.load_toml(path), str(path))
