"""The `backupbench devices` table: every block device, whether it may be used, and why not."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from backupbench import units
from backupbench.devices.blockfacts import BlockFacts
from backupbench.devices.eligibility import Reason
from backupbench.devices.probe_parse import LsblkDevice


def short_reason(problem: str, facts: BlockFacts) -> str:
    """The problem without the device name the table already shows."""
    name = facts.display_name
    return problem[len(name) + 1:] if problem.startswith(name + " ") else problem


def identity_json(identity: LsblkDevice | None) -> dict | None:
    """What lsblk says the device is (SIZE in bytes, ROTA, MODEL, SERIAL, TRAN); None when
    lsblk does not list it."""
    if identity is None:
        return None
    return {"size_bytes": identity.size_bytes, "rotational": identity.rotational, "model": identity.model,
            "serial": identity.serial, "transport": identity.transport}


def row_json(facts: BlockFacts, reasons: list[tuple[str, Reason]], identity: LsblkDevice | None = None) -> dict:
    return {
        "path": facts.path,
        "verdict": "refused" if reasons else "usable",
        "reasons": [{"rule": rule, "problem": r.problem, "fix": r.fix} for rule, r in reasons],
        "facts": facts.as_dict(),
        "lsblk": identity_json(identity),
    }


def _rotational(facts: BlockFacts, identity: LsblkDevice | None) -> str:
    """lsblk's ROTA: 1 for a spinning disk (or one that says so), 0 for flash."""
    value = facts.rotational if facts.rotational is not None else (identity.rotational if identity else None)
    return "" if value is None else str(int(value))


def devices_table(rows: list[tuple[BlockFacts, list[tuple[str, Reason]]]], names: dict[str, str],
                  identities: dict[str, LsblkDevice] | None = None) -> Table:
    table = Table(show_lines=True)
    # A device's path is what the user copies into a recipe: never cut, the other columns wrap first.
    longest = max((len(line) for facts, _ in rows for line in facts.display_name.splitlines()), default=6)
    table.add_column("Device", no_wrap=True, min_width=min(longest, 72))
    table.add_column("Type")
    table.add_column("Size", justify="right")
    for heading in ("ROTA", "TRAN", "Model", "Serial"):
        table.add_column(heading)
    table.add_column("Verdict", no_wrap=True, min_width=len("refused"))
    table.add_column("Why not")
    for facts, reasons in rows:
        device = facts.display_name
        if facts.kernel_name and names.get(facts.kernel_name, facts.kernel_name) != facts.kernel_name:
            device += f"\n({names[facts.kernel_name]})"
        identity = (identities or {}).get(facts.kernel_name or "")
        size_bytes = facts.size_bytes if facts.size_bytes is not None else (identity.size_bytes if identity else None)
        size = units.format_size(size_bytes) if size_bytes is not None else ""
        described = [identity.transport, identity.model, identity.serial] if identity else [None] * 3
        verdict = "[red]refused[/]" if reasons else "[green]usable[/]"
        why = "\n".join(f"- {escape(short_reason(r.problem, facts))}" for _, r in reasons)
        table.add_row(escape(device), escape(facts.type or facts.file_kind), size, _rotational(facts, identity),
                      *(escape(text or "") for text in described), verdict, why)
    return table
