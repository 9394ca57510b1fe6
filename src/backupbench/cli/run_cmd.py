"""`backupbench run [PATH]`: one workload against one directory, monitored and stored."""

from __future__ import annotations

from pathlib import Path

import click

from backupbench.cli import options as cli_options
from backupbench.cli.common import baseline_option, open_store, print_json, results_option, stderr, stdout
from backupbench.cli.progress import QuietReporter, RichReporter
from backupbench.engines.fio import FioEngine
from backupbench.recipe.monitor import MonitorOptions
from backupbench.recipe.suite import SuiteOptions
from backupbench.report.terminal import run_report
from backupbench.results.location import results_dir
from backupbench.runner import registry
from backupbench.runner.pipeline import RunRequest, execute, run_as_dict

WORKLOAD_HELP = "Workload to run: " + "; ".join(f"{name}: {text}" for name, (text, _) in registry.WORKLOADS.items())


@click.command("run")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--workload", type=click.Choice(list(registry.WORKLOADS)), default="kb2014", show_default=True,
              help=WORKLOAD_HELP)
@cli_options.click_options(SuiteOptions)
@cli_options.click_options(MonitorOptions)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@baseline_option
@results_option
def run_command(path: Path | None, workload: str, as_json: bool, quiet: bool, baseline_ref: str | None,
                results: Path | None, **values: object) -> None:
    """Run a backup workload with fio against a tagged test file in PATH, sampling the host.

    Without PATH, a scratch directory is made in the current directory and removed afterwards.
    Everything the run writes in PATH is named backupbench-<run> and is always removed.
    """
    suite_values, rest = cli_options.split(SuiteOptions, values)
    options = cli_options.build(SuiteOptions, suite_values)
    monitor = cli_options.build(MonitorOptions, rest)
    # Resolve the baseline before measuring, so a typo fails in a second, not after the run.
    baseline = open_store(results)[1].load_run(baseline_ref) if baseline_ref else None
    engine = FioEngine()
    request = RunRequest(
        workload=registry.build(workload, options), results=results_dir(results), target=path,
        scratch_parent=Path.cwd(), monitor=monitor, host_facts={"fio": engine.version()},
    )
    if quiet:
        record = execute(request, QuietReporter())
    else:
        with RichReporter(stderr) as reporter:
            record = execute(request, reporter)
    if as_json:
        print_json(run_as_dict(record))
    else:
        stdout.print(run_report(record, baseline=baseline))
