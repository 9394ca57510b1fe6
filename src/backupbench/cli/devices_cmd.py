"""`backupbench devices`: every block device, whether backupbench may use it, and why not."""

from __future__ import annotations

from dataclasses import dataclass, field

import click
from rich.markup import escape
from rich.table import Table

from backupbench import process, units
from backupbench.cli.common import print_json, stdout
from backupbench.devices.blockfacts import BlockFacts, Host, Runner, collect, collect_system
from backupbench.devices.blockrules import named_refusals
from backupbench.devices.eligibility import Reason
from backupbench.errors import BackupbenchError, RefusedError


@dataclass
class DeviceProbe:
    """How the command looks at the machine. Tests put their own in click's ctx.obj."""

    run: Runner = process.run
    host: Host = field(default_factory=Host)


def _device_path(arg: str, host: Host) -> str:
    """A bare kernel name ('vdh', 'loop3') stands for /dev/NAME; anything else is a path."""
    if "/" not in arg and not host.path_info(arg).exists and host.path_info(f"/dev/{arg}").exists:
        return f"/dev/{arg}"
    return arg


def _short(problem: str, facts: BlockFacts) -> str:
    """The problem without the device name the table already shows."""
    name = facts.display_name
    return problem[len(name) + 1:] if problem.startswith(name + " ") else problem


def _row_json(facts: BlockFacts, reasons: list[tuple[str, Reason]]) -> dict:
    return {
        "path": facts.path,
        "verdict": "refused" if reasons else "usable",
        "reasons": [{"rule": rule, "problem": r.problem, "fix": r.fix} for rule, r in reasons],
        "facts": facts.as_dict(),
    }


def _table(rows: list[tuple[BlockFacts, list[tuple[str, Reason]]]], names: dict[str, str]) -> Table:
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
        why = "\n".join(f"- {escape(_short(r.problem, facts))}" for _, r in reasons)
        table.add_row(escape(device), escape(facts.type or facts.file_kind), size, verdict, why)
    return table


@click.argument("device_args", nargs=-1, metavar="[DEVICE]...")
@click.option("--json", "as_json", is_flag=True, help="Print facts, verdicts and reasons as JSON.")
@click.pass_context
def _devices(ctx: click.Context, device_args: tuple[str, ...], as_json: bool) -> None:
    """Show block devices and whether backupbench may build a layout on them.

    Without DEVICE, every block device lsblk knows; a DEVICE is a path (/dev/vdb,
    /dev/disk/by-id/...) or a kernel name (vdb). Only reads: nothing is opened for writing.
    Exit status 3 when a named DEVICE is refused.
    """
    probe = ctx.find_object(DeviceProbe) or DeviceProbe()
    system = collect_system(run=probe.run, host=probe.host)
    if device_args:
        targets = [_device_path(arg, probe.host) for arg in device_args]
    else:
        if not system.devices:
            raise BackupbenchError("cannot list block devices: " + ("; ".join(system.errors) or "lsblk shows none"),
                                   "name the devices to check, e.g. backupbench devices /dev/vdb")
        targets = []
        for device in system.devices:
            plain = f"/dev/{device.kname}"
            targets.append(plain if probe.host.path_info(plain).exists else (device.path or plain))
    rows = [(facts, named_refusals(facts))
            for facts in (collect(t, run=probe.run, host=probe.host, system=system) for t in targets)]

    if as_json:
        print_json([_row_json(facts, reasons) for facts, reasons in rows])
    else:
        names = {d.kname: d.name for d in system.devices}
        stdout.print(_table(rows, names))
        if device_args:
            for facts, reasons in rows:
                if reasons:
                    stdout.print(f"\n{facts.display_name}:", markup=False, highlight=False)
                for _, reason in reasons:
                    stdout.print(f"  - {_short(reason.problem, facts)}\n    fix: {reason.fix}",
                                 markup=False, highlight=False)
        elif any(reasons for _, reasons in rows):
            stdout.print("Run `backupbench devices DEVICE` to see what could be done about each reason.",
                         markup=False)
    if device_args and any(reasons for _, reasons in rows):
        ctx.exit(RefusedError.exit_code)


devices_command = click.command("devices")(_devices)
