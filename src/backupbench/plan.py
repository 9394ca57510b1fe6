"""recipe -> ordered steps: for each layout its checks, provisioning, workloads and teardown;
for a recipe with [hosts], each workload and the machines it runs on.

Planning runs no command that changes anything: each layout is planned once (its actions
and the requirements it declares), then the host is asked only for what those need, and
every device for what is on it. Refusals become reasons printed with the plan. Other
machines are not asked anything: `apply` checks every one before the first workload.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pydantic import BaseModel, ConfigDict, Field

from backupbench.devices import identity
from backupbench.devices.checks import DeviceChecks
from backupbench.errors import BackupbenchError
from backupbench.faults import rules as fault_rules
from backupbench.layouts import capabilities
from backupbench.layouts.actions import Action, LayoutPlan
from backupbench.layouts.naming import DEFAULT_MOUNT_ROOT
from backupbench.layouts.registry import plan_layout
from backupbench.paths import PathRefused, Syntax, for_program
from backupbench.recipe import naming
from backupbench.recipe.model import Recipe
from backupbench.schema import DirectoryPath
from backupbench.workloads.registry import WORKLOADS

# Set by `backupbench lab` in its guest (lab/vm.py): the disks are throwaway images.
LAB_ENV = "BACKUPBENCH_LAB"
# device path -> the reasons it may not be formatted (empty: usable)
DeviceCheck = Callable[[str], list[str]]
# recipe -> why its [hosts] workloads cannot run (empty: they can)
RemoteCheck = Callable[[Recipe], list[str]]
# What a [hosts] recipe's workload runs through (RemoteStep.through).
FIO_SERVERS, AGENTS = "fio servers", "backupbench agents"


class PlanOptions(BaseModel):
    """Options of `plan` and `apply` (flags), beside the recipe."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    mount_root: DirectoryPath = Field(str(DEFAULT_MOUNT_ROOT), description="Where layouts are mounted.",
                                      json_schema_extra={"metavar": "DIR"})


@dataclass
class LayoutStep:
    layout: LayoutPlan
    refusals: list[str] = field(default_factory=list)

    @property
    def teardown(self) -> list[Action]:
        return [action for action in reversed(self.layout.actions) if action.undo]


@dataclass(frozen=True)
class RemoteStep:
    """One workload of a [hosts] recipe: where it runs, through what, and on what."""

    group: str                   # its phases are stored as <group>/<phase>; "" for a recipe's only workload
    kind: str
    phases: tuple[str, ...]
    machines: tuple[str, ...]    # fio servers (host names) or agents (ADDR:PORT)
    through: str                 # "fio servers" or "backupbench agents"
    works_on: str                # the directory on every host, or the bucket at its endpoint

    def lines(self) -> list[str]:
        stored = naming.operation(self.group, "<phase>")
        towards = "from" if self.through == AGENTS else "on"
        return [f"{self.kind} {towards} {len(self.machines)} {self.through}: {', '.join(self.machines)}",
                f"works on {self.works_on}", f"phases: {', '.join(self.phases)} (stored as {stored})"]

    def as_dict(self) -> dict:
        return {"group": self.group, "kind": self.kind, "phases": list(self.phases), "machines": list(self.machines),
                "through": self.through, "works_on": self.works_on}


@dataclass
class Plan:
    recipe: Recipe
    run_id: str
    steps: list[LayoutStep]
    remote: list[RemoteStep] = field(default_factory=list)
    # Why a [hosts] recipe's workloads cannot run as asked (checks of a later stage: runner/apply_hosts.py).
    remote_refusals: list[str] = field(default_factory=list)
    # What is wrong with the recipe's devices as a whole (two names of one device).
    device_refusals: list[str] = field(default_factory=list)

    def operations(self) -> list[str]:
        """Every operation `apply` stores for this plan, named as the runner names them
        (recipe/naming.py): what `apply --expect` is checked against before anything runs."""
        return naming.recipe_operations(self.recipe, [step.layout for step in self.steps])

    @property
    def refusals(self) -> list[str]:
        return ([f"devices: {reason}" for reason in self.device_refusals]
                + [f"{step.layout.name}: {reason}" for step in self.steps for reason in step.refusals]
                + [f"hosts: {reason}" for reason in self.remote_refusals])


def _missing_reason(kind: str, missing: list) -> str:
    what = ", ".join(req.what for req in missing)
    tools = [req for req in missing if req.check.startswith("tool:")]
    hint = ("; this kernel lacks it: try the layout in the lab VM (backupbench lab RECIPE)"
            if len(tools) < len(missing) else "; install the tools first")
    return f"{kind} needs {what}, which this machine does not offer{hint}"


def _path_refusals(recipe: Recipe, layout: LayoutPlan) -> list[str]:
    """Where the workloads will work, checked now against how their programs read a path
    (fio a job file, MinIO its drive arguments): refused before any layout is built."""
    wanted = [(layout.mount_point, WORKLOADS[entry.kind].path_syntax) for entry in recipe.workload]
    wanted += [(drive, Syntax.MINIO_DRIVE) for drive in layout.s3_drives]
    problems = []
    for path, syntax in wanted:
        if path is None:
            continue
        try:
            for_program(path, syntax)
        except PathRefused as exc:
            if exc.message not in problems:
                problems.append(exc.message)
    return problems


def plan_layouts(recipe: Recipe, run_id: str, mount_root: Path = DEFAULT_MOUNT_ROOT) -> list[LayoutPlan]:
    """Each layout of the recipe planned once: its actions and what it requires."""
    return [plan_layout(spec, run_id, mount_root) for spec in recipe.layout]


def _not_whole_disk(device: str, kind: str | None) -> str:
    return (f"{device}: is a {'partition' if kind == 'part' else kind}, and this layout takes whole disks "
            "(zpool partitions a disk itself; teardown clears what it wrote) - name the disk")




def remote_steps(recipe: Recipe) -> tuple[list[RemoteStep], list[str]]:
    """Each workload of a [hosts] recipe and where it runs; refusals of a workload that cannot be built."""
    hosts = recipe.hosts
    if hosts is None:
        return [], []
    steps, refusals = [], []
    for index, entry in enumerate(recipe.workload):
        definition = WORKLOADS[entry.kind]
        try:
            definition.build(entry, None)  # what it refuses (a file too small for its blocks), said now
        except BackupbenchError as exc:
            refusals.append(f"workload[{index}] ({entry.kind}): {exc.one_line()}")
            continue
        if definition.capabilities.fio_servers:
            where = (tuple(host.name for host in hosts.hosts()), FIO_SERVERS,
                     f"{hosts.path} on every host (one test file per host, removed at the end)")
        else:
            where = (hosts.agents, AGENTS,
                     f"bucket {entry.bucket} at {entry.endpoint} (one key prefix per agent, removed at the end)")
        group = naming.workload_group("", index, entry.kind, len(recipe.workload))
        steps.append(RemoteStep(group, entry.kind, naming.phases(entry), *where))
    return steps, refusals


def build(recipe: Recipe, run_id: str, caps: capabilities.HostCapabilities, check_device: DeviceCheck, *,
          mount_root: Path = DEFAULT_MOUNT_ROOT, layouts: list[LayoutPlan] | None = None,
          device_kind: Callable[[str], str | None] = lambda _device: None, in_lab: bool = False,
          remote_check: RemoteCheck = lambda _recipe: [],
          identify: identity.Identify = identity.as_written) -> Plan:
    """remote_check: refusals of a [hosts] recipe's workloads found by checks this stage cannot
    make (runner/apply_hosts.refusals: agent addresses, what agents cannot do). identify: which
    device a path names (every comparison of devices below is by spelling, which is right only
    once no two of the recipe's spellings name one device)."""
    if recipe.hosts is not None:
        remote, refusals = remote_steps(recipe)
        # Both may fail to build the same workload: say it once.
        return Plan(recipe, run_id, [], remote, list(dict.fromkeys(refusals + remote_check(recipe))))
    steps = []
    checked: dict[str, list[str]] = {}
    for spec, layout in zip(recipe.layout, layouts or plan_layouts(recipe, run_id, mount_root)):
        step = LayoutStep(layout)
        absent = capabilities.missing(layout.requirements, caps)
        if absent:
            step.refusals.append(_missing_reason(layout.kind, absent))
        for device in layout.devices:
            if device not in checked:
                checked[device] = check_device(device)
            step.refusals += [f"{device}: {reason}" for reason in checked[device]]
            kind = device_kind(device)
            if layout.whole_disks and kind not in (None, "disk"):
                step.refusals.append(_not_whole_disk(device, kind))
        if spec.kind == "directory" and not Path(spec.path).is_dir():
            step.refusals.append(f"{spec.path} is not an existing directory")
        step.refusals += _path_refusals(recipe, layout)
        step.refusals += fault_rules.plan_refusals(layout.fault, in_lab)
        steps.append(step)
    # Every layout device is in [devices] as written (recipe/model.py), so [devices] holds every spelling.
    same = [identity.alias_problem(group) for group in identity.aliases(recipe.devices, identify)]
    return Plan(recipe, run_id, steps, device_refusals=same)


def make(recipe: Recipe, run_id: str, options: PlanOptions,
         remote_check: RemoteCheck = lambda _recipe: []) -> tuple[Plan, DeviceChecks]:
    """The plan on this host: layouts planned once, the host asked only for the tools and
    kernel features they declare, every device checked (read-only)."""
    checks = DeviceChecks(tuple(recipe.devices))
    if recipe.hosts is not None:  # nothing is built here: nothing of this host to ask
        nothing = capabilities.HostCapabilities(frozenset(), frozenset())
        return build(recipe, run_id, nothing, checks.reasons, remote_check=remote_check), checks
    mount_root = Path(options.mount_root)
    layouts = plan_layouts(recipe, run_id, mount_root)
    tools = tuple(dict.fromkeys(tool for layout in layouts for tool in capabilities.tools_of(layout.requirements)))
    caps = capabilities.collect(which=capabilities.which, tools=tools)
    in_lab = os.environ.get(LAB_ENV) == "1"
    return build(recipe, run_id, caps, checks.reasons, mount_root=mount_root, layouts=layouts,
                 device_kind=checks.kind_of, in_lab=in_lab, remote_check=remote_check,
                 identify=identity.identify), checks
