"""The plan as a person reads it: per layout, what is checked, run, measured and undone."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from backupbench import process
from backupbench.plan import Plan


def _command(argv) -> Text:
    return Text("    $ " + process.render(list(argv)), style="cyan")


def render(plan: Plan) -> RenderableType:
    lines: list[RenderableType] = [Text(f"Plan for recipe {plan.recipe.name!r} (run {plan.run_id})", style="bold")]
    if plan.recipe.description:
        lines.append(Text(plan.recipe.description))
    workloads = ", ".join(w.kind for w in plan.recipe.workload)
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
                lines.append(Text(f"  - {action.description}"))
                lines.extend(_command(argv) for argv in action.do)
        lines.append(Text(f"  measure: {workloads} in {layout.mount_point}"
                          + (", snapshot Data% sampled" if layout.watched_snapshots else "")))
        if step.teardown:
            lines.append(Text("  teardown (each step only if its object still carries the run's tag):"))
            for action in step.teardown:
                lines.extend(_command(argv) for argv in action.undo)
    verdict = ("\nREFUSED: nothing will be changed." if plan.refusals
               else "\nNothing has been changed. Run it with: backupbench apply RECIPE --yes")
    lines.append(Text(verdict, style="red" if plan.refusals else "green"))
    return Group(*lines)


def as_dict(plan: Plan) -> dict:
    return {
        "recipe": plan.recipe.name, "run_id": plan.run_id, "refusals": plan.refusals,
        "layouts": [
            {"name": s.layout.name, "kind": s.layout.kind, "devices": list(s.layout.devices),
             "mount_point": str(s.layout.mount_point) if s.layout.mount_point else None,
             "refusals": s.refusals, "actions": [a.as_dict() for a in s.layout.actions],
             "teardown": [list(argv) for a in s.teardown for argv in a.undo]}
            for s in plan.steps
        ],
    }
