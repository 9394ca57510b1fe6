"""The `backupbench devices` table: every block device, whether it may be used, and why not."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from backupbench import units
from backupbench.devices.blockfacts import BlockFacts
from backupbench.devices.eligibility import Reason


def short_reason(problem: str, facts: BlockFacts) -> str:
    """The problem without the device name the table already shows."""
    name = facts.display_name
    return problem[len(name) + 1:] if problem.startswith(name + " ") else problem


def row_json(facts: BlockFacts, reasons: list[tuple[str, Reason]]) -> dict:
    return {
        "path": facts.path,
        "verdict": "refused" if reasons else "usable",
        "reasons": [{"rule": rule, "problem": r.problem, "fix": r.fix} for rule, r in reasons],
        "facts": facts.as_dict(),
    }


def devices_table(rows: list[tuple[BlockFacts, list[tuple[str, Reason]]]], names: dict[str, str]) -> Table:
    table = Table(show_lines=True)
    table.add_column("Device", no_wrap=True)
    table.add_column("Type")
    table.add_column("Size", justify="right")
    table.add_column("Verdict")
    table.add_column("Why not")
    for facts, reasons in rows:
        device = facts.display_name
        if facts.kernel_name and names.get(facts.kernel_name, facts.kernel_name) != facts.kernel_name:
            device += f"\n({names[facts.kernel_name]})"
        size = units.format_size(facts.size_bytes) if facts.size_bytes is not None else ""
        verdict = "[red]refused[/]" if reasons else "[green]usable[/]"
        why = "\n".join(f"- {escape(short_reason(r.problem, facts))}" for _, r in reasons)
        table.add_row(escape(device), escape(facts.type or facts.file_kind), size, verdict, why)
    return table
