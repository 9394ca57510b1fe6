"""`backupbench history` and `backupbench show RUN`: runs read back from the store."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from backupbench.analysis.options import ShowOptions
from backupbench.cli import options as cli_options
from backupbench.cli.common import (baseline_option, open_store, print_document, results_option, run_analysis,
                                    stdout)
from backupbench.analysis.compare import require_common_phase, run_name
from backupbench.analysis.gates import Expectation
from backupbench.cli.common import Gate, expect_option
from backupbench.errors import InputError
from backupbench.report.terminal import history_table, run_report
from backupbench.results import csvout, document


def _one_format(as_json: bool, as_csv: bool) -> None:
    if as_json and as_csv:
        raise InputError("--json and --csv do not go together", "choose one")


@click.command("history")
@click.option("--limit", type=click.IntRange(1, 1_000_000), default=20, show_default=True,
              help="How many runs, newest first.")
@click.option("--json", "as_json", is_flag=True, help="Print the runs as a JSON document (docs/results.md).")
@click.option("--csv", "as_csv", is_flag=True,
              help="Print every figure of the runs as CSV, one row per run, phase, figure and device.")
@results_option
def history_command(limit: int, as_json: bool, as_csv: bool, results: Path | None) -> None:
    """List stored runs, newest first."""
    _one_format(as_json, as_csv)
    _, store = open_store(results)
    runs = store.list_runs(limit)
    if as_json:
        print_document("history", {"runs": [document.run_body(run, run_analysis(run)) for run in runs]})
    elif as_csv:
        csvout.write_figures(runs, sys.stdout)
    elif not runs:
        stdout.print("No runs stored yet. Start one with: backupbench run PATH")
    else:
        stdout.print(history_table(runs))


@click.command("show")
@click.argument("run_ref", metavar="RUN", default="latest")
@cli_options.click_options(ShowOptions)
@click.option("--json", "as_json", is_flag=True,
              help="Print the run as a JSON document: figures with units, windows, restore range, baseline.")
@click.option("--csv", "as_csv", is_flag=True,
              help="Print the run's figures as CSV, one row per phase, figure and device.")
@baseline_option
@expect_option
@results_option
def show_command(run_ref: str, as_json: bool, as_csv: bool, baseline_ref: str | None, expectations: list[Expectation],
                 results: Path | None, **values: object) -> None:
    """Print a stored run again (RUN: an id, a unique prefix of one, a --label, or 'latest')."""
    _one_format(as_json, as_csv)
    directory, store = open_store(results)
    run = store.load_run(run_ref)
    size = cli_options.build(ShowOptions, values).backup_size
    baseline = store.load_run(baseline_ref) if baseline_ref else None
    if baseline is not None:
        require_common_phase([op.name for op in run.operations], f"run {run_name(run)}", baseline)
    gate = Gate.check(expectations, run)
    if as_json:
        print_document("run", {**document.run_body(run, run_analysis(run, size, baseline, directory)), **gate.json()})
    elif as_csv:
        csvout.write_figures([run], sys.stdout)
    else:
        stdout.print(run_report(run, size, baseline))
        gate.print_table()
    gate.finish()
