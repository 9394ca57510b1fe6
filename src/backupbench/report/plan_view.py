"""The plan as a person reads it: per layout, what is checked, run, measured and undone."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from backupbench import process
from backupbench.faults.plan import FaultPlan
from backupbench.plan import Plan
from backupbench.runner.schedule import schedule
from backupbench.workloads.sweep import points, value_text


def _command(argv) -> Text:
    return Text("    $ " + process.render(list(argv)), style="cyan")


def _fault_lines(fault: FaultPlan) -> list[RenderableType]:
    """What the fault runs between the states (each state measures the workloads again)."""
    lines: list[RenderableType] = [Text(f"  fault: healthy, then fail {', '.join(fault.failed)} (degraded):")]
    lines.extend(_command(argv) for argv in fault.fail)
    if fault.sysctls:
        lines.append(Text("  for the run (restored after): "
                          + ", ".join(f"{name} = {kib} KiB/s" for name, kib in fault.sysctls)))
    if fault.rebuild:
        checked = "; the replacement re-checked first" if fault.replacements else ""
        lines.append(Text(f"  rebuild onto {fault.target} (rebuilding, then rebuilt{checked}):"))
        lines.extend(_command(argv) for argv in fault.rebuild)
    if fault.copy_back:
        lines.append(Text(f"  copy back onto {fault.copy_back_disk} (idle, timed):"))
        lines.extend(_command(argv) for argv in fault.copy_back)
    return lines


def render(plan: Plan) -> RenderableType:
    lines: list[RenderableType] = [Text(f"Plan for recipe {plan.recipe.name!r} (run {plan.run_id})", style="bold")]
    if plan.recipe.description:
        lines.append(Text(plan.recipe.description))
    lines += [Text(f"REFUSED: devices: {reason}", style="red") for reason in plan.device_refusals]
    workloads = ", ".join(w.kind + sweep_text(w) for w in plan.recipe.workload)
    for number, step in enumerate(plan.steps, 1):
        layout = step.layout
        devices = f" on {', '.join(layout.devices)}" if layout.devices else ""
        lines.append(Text(f"\n{number}. layout {layout.name} ({layout.kind}){devices}", style="bold"))
        for reason in step.refusals:
            lines.append(Text(f"  REFUSED: {reason}", style="red"))
        for note in layout.notes:
            lines.append(Text(f"  note: {note}"))
        if layout.actions:
            lines.append(Text("  provision (devices re-checked, then O_EXCL-opened, right before the first write):"))
            for action in layout.actions:
                # Planned for the teardown of what a fault may leave (MinIO's stacked mounts).
                teardown_only = " (nothing now: undone at teardown if needed)" if not action.do else ""
                lines.append(Text(f"  - {action.description}{teardown_only}"))
                lines.extend(_command(argv) for argv in action.do)
        lines.append(Text(f"  measure: {workloads} in {layout.mount_point}"
                          + (", snapshot Data% sampled" if layout.watched_snapshots else "")))
        if layout.fault is not None:
            lines.extend(_fault_lines(layout.fault))
        if step.teardown:
            lines.append(Text("  teardown (each step only if its object still carries the run's tag):"))
            for action in step.teardown:
                lines.extend(_command(argv) for argv in action.undo)
    order = planned_order(plan)
    if order:
        lines.append(Text(f"\norder: {order}"))
    verdict = ("\nREFUSED: nothing will be changed." if plan.refusals
               else "\nNothing has been changed. Run it with: backupbench apply RECIPE --yes")
    lines.append(Text(verdict, style="red" if plan.refusals else "green"))
    return Group(*lines)


def sweep_text(entry) -> str:
    """' (a sweep of 6 points: iodepth 1, 4, 16 x jobs 1, 2, one after another)', '' without one."""
    if not entry.sweep:
        return ""
    grid = " x ".join(f"{name} {', '.join(value_text(v) for v in values)}" for name, values in entry.sweep.items())
    return f" (a sweep of {len(points(entry.sweep))} points: {grid}, one after another)"


def _fault_dict(fault: FaultPlan | None) -> dict | None:
    if fault is None:
        return None
    return {"failed": list(fault.failed), "target": fault.target, "fail": [list(a) for a in fault.fail],
            "rebuild": [list(a) for a in fault.rebuild], "copy_back": [list(a) for a in fault.copy_back],
            "sysctls": {name: kib for name, kib in fault.sysctls}}


def planned_order(plan: Plan) -> str | None:
    """With repeats: whether the layouts will be measured in alternating rounds or one after
    another, and why (the run stores the same note, said after the fact)."""
    return schedule([step.layout for step in plan.steps], [spec.repeat for spec in plan.recipe.workload],
                    planned=True).note


def as_dict(plan: Plan) -> dict:
    return {
        "recipe": plan.recipe.name, "run_id": plan.run_id, "refusals": plan.refusals, "order": planned_order(plan),
        "layouts": [
            {"name": s.layout.name, "kind": s.layout.kind, "devices": list(s.layout.devices),
             "mount_point": str(s.layout.mount_point) if s.layout.mount_point else None,
             "refusals": s.refusals, "actions": [a.as_dict() for a in s.layout.actions],
             "teardown": [list(argv) for a in s.teardown for argv in a.undo],
             "fault": _fault_dict(s.layout.fault)}
            for s in plan.steps
        ],
    }
