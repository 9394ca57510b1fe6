"""`backupbench history` and `backupbench show RUN`: runs read back from the store."""

from __future__ import annotations

from pathlib import Path

import click

from backupbench.analysis.options import ShowOptions
from backupbench.cli import options as cli_options
from backupbench.cli.common import baseline_option, open_store, print_json, results_option, stdout
from backupbench.report.terminal import history_table, run_report
from backupbench.runner.pipeline import run_as_dict


@click.command("history")
@click.option("--limit", type=click.IntRange(1, 1_000_000), default=20, show_default=True,
              help="How many runs, newest first.")
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON.")
@results_option
def history_command(limit: int, as_json: bool, results: Path | None) -> None:
    """List stored runs, newest first."""
    _, store = open_store(results)
    runs = store.list_runs(limit)
    if as_json:
        print_json([run_as_dict(run) for run in runs])
    elif not runs:
        stdout.print("No runs stored yet. Start one with: backupbench run PATH")
    else:
        stdout.print(history_table(runs))


@click.command("show")
@click.argument("run_ref", metavar="RUN", default="latest")
@cli_options.click_options(ShowOptions)
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON.")
@baseline_option
@results_option
def show_command(run_ref: str, as_json: bool, baseline_ref: str | None, results: Path | None,
                 **values: object) -> None:
    """Print a stored run again (RUN: an id, a unique prefix of one, or 'latest')."""
    _, store = open_store(results)
    run = store.load_run(run_ref)
    if as_json:
        print_json(run_as_dict(run))
        return
    size = cli_options.build(ShowOptions, values).backup_size
    baseline = store.load_run(baseline_ref) if baseline_ref else None
    stdout.print(run_report(run, size, baseline))
