"""recipe -> ordered steps: for each layout its checks, provisioning, workloads and teardown.

Planning runs no command that changes anything: it reads what the host offers and what is
on each device, and turns refusals into reasons printed with the plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from backupbench.layouts import capabilities
from backupbench.layouts.actions import Action, LayoutPlan
from backupbench.layouts.naming import DEFAULT_MOUNT_ROOT
from backupbench.layouts.registry import plan_layout
from backupbench.recipe.model import Recipe

# device path -> the reasons it may not be formatted (empty: usable)
DeviceCheck = Callable[[str], list[str]]


@dataclass
class LayoutStep:
    layout: LayoutPlan
    refusals: list[str] = field(default_factory=list)

    @property
    def teardown(self) -> list[Action]:
        return [action for action in reversed(self.layout.actions) if action.undo]


@dataclass
class Plan:
    recipe: Recipe
    run_id: str
    steps: list[LayoutStep]

    @property
    def refusals(self) -> list[str]:
        return [f"{step.layout.name}: {reason}" for step in self.steps for reason in step.refusals]


def _missing_reason(kind: str, missing: list) -> str:
    what = ", ".join(req.what for req in missing)
    tools = [req for req in missing if req.check.startswith("tool:")]
    hint = ("; this kernel lacks it: try the layout in the lab VM (backupbench lab RECIPE)"
            if len(tools) < len(missing) else "; install the tools first")
    return f"{kind} needs {what}, which this machine does not offer{hint}"


def build(recipe: Recipe, run_id: str, caps: capabilities.HostCapabilities, check_device: DeviceCheck,
          mount_root: Path = DEFAULT_MOUNT_ROOT) -> Plan:
    steps = []
    checked: dict[str, list[str]] = {}
    for spec in recipe.layout:
        layout = plan_layout(spec, run_id, mount_root)
        step = LayoutStep(layout)
        absent = capabilities.missing(layout.requirements, caps)
        if absent:
            step.refusals.append(_missing_reason(layout.kind, absent))
        for device in layout.devices:
            if device not in checked:
                checked[device] = check_device(device)
            step.refusals += [f"{device}: {reason}" for reason in checked[device]]
        if spec.kind == "directory" and not Path(spec.path).is_dir():
            step.refusals.append(f"{spec.path} is not an existing directory")
        steps.append(step)
    return Plan(recipe, run_id, steps)


def required_tools(recipe: Recipe, run_id: str = "plan-0000") -> tuple[str, ...]:
    tools: list[str] = []
    for spec in recipe.layout:
        for tool in capabilities.tools_of(plan_layout(spec, run_id).requirements):
            if tool not in tools:
                tools.append(tool)
    return tuple(tools)
