"""`backupbench devices`: every block device, whether backupbench may use it, and why not."""

from __future__ import annotations

from dataclasses import dataclass, field

import click
from backupbench import process
from backupbench.cli.common import print_document, stdout
from backupbench.devices.blockfacts import collect, probe_signatures
from backupbench.devices.probe_host import Host
from backupbench.devices.probe_parse import LsblkDevice, parse_lsblk_json
from backupbench.devices.systemfacts import Runner, collect_system, run_tool
from backupbench.devices.blockrules import named_refusals
from backupbench.report.devices import devices_table, row_json, short_reason
from backupbench.errors import BackupbenchError, RefusedError


@dataclass
class DeviceProbe:
    """How the command looks at the machine. Tests put their own in click's ctx.obj."""

    run: Runner = process.run
    host: Host = field(default_factory=Host)


# What each device is, for people: the rules' own lsblk (systemfacts.LSBLK_COLUMNS) does not ask.
IDENTITY_COLUMNS = "KNAME,SIZE,ROTA,MODEL,SERIAL,TRAN"


def _identities(run: Runner) -> dict[str, LsblkDevice]:
    """kernel name -> what lsblk says the device is. Empty when lsblk cannot tell: these
    columns only describe, so their loss leaves blank cells and refuses nothing."""
    result = run_tool(run, ["lsblk", "--json", "--bytes", "--output", IDENTITY_COLUMNS]).result
    if result is None or result.returncode != 0:
        return {}
    try:
        return {device.kname: device for device in parse_lsblk_json(result.stdout)}
    except ValueError:
        return {}


def _device_path(arg: str, host: Host) -> str:
    """A bare kernel name ('vdh', 'loop3') stands for /dev/NAME; anything else is a path."""
    if "/" not in arg and not host.path_info(arg).exists and host.path_info(f"/dev/{arg}").exists:
        return f"/dev/{arg}"
    return arg


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
    signatures = probe_signatures(targets, probe.run, probe.host)
    rows = [(facts, named_refusals(facts)) for facts in (
        collect(t, run=probe.run, host=probe.host, system=system, signatures=signatures) for t in targets)]
    identities = _identities(probe.run)

    if as_json:
        print_document("devices", {"devices": [row_json(facts, reasons, identities.get(facts.kernel_name or ""))
                                               for facts, reasons in rows]})
    else:
        names = {d.kname: d.name for d in system.devices}
        stdout.print(devices_table(rows, names, identities))
        if device_args:
            for facts, reasons in rows:
                if reasons:
                    stdout.print(f"\n{facts.display_name}:", markup=False, highlight=False)
                for _, reason in reasons:
                    stdout.print(f"  - {short_reason(reason.problem, facts)}\n    fix: {reason.fix}",
                                 markup=False, highlight=False)
        elif any(reasons for _, reasons in rows):
            stdout.print("Run `backupbench devices DEVICE` to see what could be done about each reason.",
                         markup=False)
    if device_args and any(reasons for _, reasons in rows):
        ctx.exit(RefusedError.exit_code)


devices_command = click.command("devices")(_devices)
