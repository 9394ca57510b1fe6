"""`backupbench size ...`: the sizing answers of field notes D and E, worked out instead of on paper.

capacity (usable space and fault tolerance), rebuild (one replacement disk vs dRAID's
distributed spares), snapshot (classic snapshot size rule and its write cost), window
(backup windows and the speed a window needs, also from a stored run)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable

import click

from backupbench.cli import options as cli_options
from backupbench.cli.common import open_store, print_document, results_option, stdout
from backupbench.cli.repository_cmd import repository_command
from backupbench.errors import InputError
from backupbench.report.sizing import (capacity_table, measured_table, notes, rate_text, rebuild_table,
                                      snapshot_lines, snapshot_table, window_table)
from backupbench.sizing.capacity import LayoutSpec, usable_capacity
from backupbench.sizing.measured_rebuild import MeasuredRebuild, measured_rebuilds
from backupbench.sizing.options import CapacityOptions, RebuildOptions, SnapshotOptions, WindowOptions
from backupbench.sizing.rebuild import rebuild_time
from backupbench.sizing.snapshot import snapshot_sizing
from backupbench.sizing.window import MeasuredWindow, measured_windows, window_estimate

def _notes(pairs: list[tuple[str, str]]) -> None:
    for line in notes(pairs):
        stdout.print(line)


def json_option(command: Callable) -> Callable:
    return click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON (exact bytes).")(command)


@click.group("size")
def size_command() -> None:
    """Sizing answers: usable capacity, rebuild time, snapshot size, backup window.

    Sizes: 6TB is decimal (as disks are sold), 6TiB binary; a bare letter is binary (6T = 6 TiB).
    """


@size_command.command("capacity")
@cli_options.click_options(CapacityOptions)
@json_option
def capacity_command(as_json: bool, **values: object) -> None:
    """Usable capacity, efficiency and how many disks may fail without data loss.

    Example: backupbench size capacity --disks 45 --disk-size 6TB --layout draid2 --draid-data 3 --draid-spares 2
    """
    options = cli_options.build(CapacityOptions, values)
    results = [usable_capacity(spec) for spec in options.specs()]
    if as_json:
        print_document("size.capacity", {"layouts": [result.as_dict() for result in results]})
        return
    stdout.print(capacity_table(results))
    _notes([(result.layout, note) for result in results for note in result.notes])


@size_command.command("rebuild")
@cli_options.click_options(RebuildOptions)
@json_option
@results_option
def rebuild_command(as_json: bool, results: Path | None, **values: object) -> None:
    """Rebuild time: onto one replacement disk vs into dRAID's distributed spares.

    A layout other than dRAID is compared with dRAID of the same parity over the same disks
    (--draid-data, --draid-spares shape it; default 1 spare). --from-run takes the per-disk
    rate from a fault run's measured rebuild, idle and under load (for the layouts measured,
    or for --layout/--disk-size: e.g. the same layout on larger disks).

    Example: backupbench size rebuild --disks 16 --disk-size 6TB --rebuild-rate 100MB/s --layout raid6
    """
    options = cli_options.build(RebuildOptions, values)
    if options.from_run is not None:
        _rebuild_from_run(options, results, as_json)
        return
    assert options.rebuild_rate is not None
    used = 100.0 if options.used is None else options.used
    estimates = [rebuild_time(spec, options.rebuild_rate, used) for spec in options.specs()]
    if as_json:
        print_document("size.rebuild", {"layouts": [result.as_dict() for result in estimates]})
        return
    stdout.print(rebuild_table(estimates))
    _notes([(result.layout, note) for result in estimates for note in result.notes])


def _rebuild_from_run(options: RebuildOptions, results: Path | None, as_json: bool) -> None:
    _, store = open_store(results)
    run = store.load_run(options.from_run)
    measured = measured_rebuilds(run)
    if not measured:
        raise InputError(f"run {run.run_id} has no finished rebuild of a layout size models",
                         "use a run of a recipe with a fault on an mdraid, zfs or btrfs layout "
                         "(see examples/degraded-rebuild.toml)")
    answers = []
    for rebuild in measured:
        specs = options.specs() if options.layout else [_measured_spec(rebuild, options)]
        used = options.used if options.used is not None else (100.0 if options.layout else rebuild.used_percent)
        for kind, rate in rebuild.rates.items():
            if kind == "whole" and len(rebuild.rates) > 1:
                continue
            estimates = [rebuild_time(spec, max(1, int(rate)), used) for spec in specs]
            answers.append((rebuild, kind, estimates))
    if as_json:
        print_document("size.rebuild", {"run_id": run.run_id, "measured": [m.as_dict() for m in measured],
                    "layouts": [{"measured_on": m.layout, "rate": kind, **e.as_dict()}
                                for m, kind, estimates in answers for e in estimates]})
        return
    for rebuild, kind, estimates in answers:
        how = {"idle": "idle", "loaded": "under the workloads", "whole": "as measured"}[kind]
        stdout.print(rebuild_table(estimates, title=f"Rebuild at the rate {rebuild.layout} rebuilt at {how} in run "
                                                    f"{run.run_id} ({rate_text(estimates[0].rate)} per disk, "
                                                    f"measured {rebuild.seconds:.1f} s)"))
        _notes([(e.layout, note) for e in estimates for note in e.notes])


def _measured_spec(rebuild: MeasuredRebuild, options: RebuildOptions) -> LayoutSpec:
    """The layout measured; with --disk-size / --disks, on those disks instead."""
    if options.disk_size is None:
        return rebuild.spec
    count = options.disks or (len(options.disk_size) if len(options.disk_size) > 1 else rebuild.spec.disks)
    sizes = options.disk_size if len(options.disk_size) > 1 else options.disk_size * count
    return dataclasses.replace(rebuild.spec, disk_sizes=tuple(sizes))


@size_command.command("snapshot")
@cli_options.click_options(SnapshotOptions)
@json_option
def snapshot_command(as_json: bool, **values: object) -> None:
    """Classic (CoW) snapshot size by field note E's rule, and the first-write cost.

    Example: backupbench size snapshot --origin 100GB --change 10GB
    """
    options = cli_options.build(SnapshotOptions, values)
    result = snapshot_sizing(options.origin, options.change_bytes(), options.snapshots,
                             (options.factor_low, options.factor_high), (options.margin_low, options.margin_high))
    if as_json:
        print_document("size.snapshot", result.as_dict())
        return
    stdout.print(snapshot_table(result))
    for line in snapshot_lines(result):
        stdout.print(line)
    _notes([("", note) for note in result.notes])


@size_command.command("window")
@cli_options.click_options(WindowOptions)
@json_option
@results_option
def window_command(as_json: bool, results: Path | None, **values: object) -> None:
    """Hours for a full (and an incremental) at a speed; the speed a window needs.

    Example: backupbench size window --backup-size 10TiB --speed 200MiB/s --window 8h --change-rate 5%
    """
    options = cli_options.build(WindowOptions, values)
    if options.speed is None and options.window is None and options.from_run is None:
        raise InputError("size window needs --speed, --window or --from-run",
                         "e.g. --backup-size 10TiB --speed 200MiB/s")
    estimate = window_estimate(options.backup_size, options.speed, options.change_rate, options.window)
    measured: list[MeasuredWindow] = []
    run_id = None
    if options.from_run is not None:
        _, store = open_store(results)
        run = store.load_run(options.from_run)
        run_id = run.run_id
        measured = measured_windows(run, options.backup_size, options.change_rate, options.window)
        if not measured:
            raise InputError(f"run {run.run_id} has no measured backup-operation speeds",
                             "use a run of the kb2014 workload (the default of backupbench run), or give --speed")
    if as_json:
        print_document("size.window", {"estimate": estimate.as_dict(), "run_id": run_id,
                    "measured": [row.as_dict() for row in measured]})
        return
    if options.speed is not None or options.window is not None:
        stdout.print(window_table(estimate))
    if measured and run_id is not None:
        stdout.print(measured_table(run_id, measured, options.backup_size))


size_command.add_command(repository_command)
