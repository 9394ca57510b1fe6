"""`backupbench run [PATH]`: the KB2014 backup-operation suite on one directory."""

from __future__ import annotations

from pathlib import Path

import click

from backupbench.cli import options as cli_options
from backupbench.cli.common import print_json, results_option, stderr, stdout
from backupbench.cli.progress import QuietReporter, RichReporter
from backupbench.recipe.suite import SuiteOptions
from backupbench.report.terminal import run_report
from backupbench.results.location import results_dir
from backupbench.suite import SuiteRequest, run_as_dict, run_suite


@click.command("run")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@cli_options.click_options(SuiteOptions)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@results_option
def run_command(path: Path | None, as_json: bool, quiet: bool, results: Path | None, **values: object) -> None:
    """Run the backup-operation suite (Veeam KB2014 patterns) with fio against a test file in PATH.

    Without PATH, a scratch directory is made in the current directory and removed afterwards.
    The test file is named backupbench-<run>.dat and is always removed.
    """
    options = cli_options.build(SuiteOptions, values)
    request = SuiteRequest(options=options, results=results_dir(results), target=path, scratch_parent=Path.cwd())
    if quiet or as_json:
        record = run_suite(request, QuietReporter())
    else:
        with RichReporter(stderr) as reporter:
            record = run_suite(request, reporter)
    if as_json:
        print_json(run_as_dict(record))
    else:
        stdout.print(run_report(record))
