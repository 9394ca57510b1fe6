"""`backupbench run [PATH]`: one workload against one directory, monitored and stored."""

from __future__ import annotations

from pathlib import Path

import click

from backupbench.cli import options as cli_options
from backupbench.cli.common import baseline_option, finished_runs, open_store, print_json, results_option, stderr, stdout
from backupbench.cli.progress import QuietReporter, RichReporter
from backupbench.engines.fio import FioEngine
from backupbench.engines.s3 import S3Engine
from backupbench.errors import InputError
from backupbench.monitor.options import MonitorOptions
from backupbench.recipe.suite import SuiteOptions
from backupbench.report.terminal import run_report
from backupbench.results.location import results_dir
from backupbench.runner import registry
from backupbench.runner.pipeline import RunRequest, execute, run_as_dict
from backupbench.workloads.s3 import S3Options
from backupbench.workloads.smallfiles import PRESETS, SmallFilesSpec, with_preset

WORKLOAD_HELP = "Workload to run: " + "; ".join(f"{name}: {registry.describe(name)}" for name in registry.WORKLOADS)
WORKLOAD_MODELS = (SuiteOptions, SmallFilesSpec, S3Options)


def _workload_options(workload: str, preset: str | None, values: dict) -> object:
    """The chosen workload's options; a flag that belongs to another workload is an error."""
    model = registry.options_model(workload)
    for other in WORKLOAD_MODELS:
        if other is model:
            continue
        given, _ = cli_options.split(other, values)
        stray = [name for name, value in given.items()
                 if value is not None and value is not False and name not in model.model_fields]
        if stray:
            raise InputError(f"{cli_options.flag_name(stray[0])} does not apply to --workload {workload}",
                             "drop it, or choose the workload it belongs to (see backupbench run --help)")
    mine, _ = cli_options.split(model, values)
    if model is SmallFilesSpec:
        given = {k: v for k, v in mine.items() if v is not None and v is not False}
        return cli_options.build(model, with_preset(preset, given))
    if preset:
        raise InputError("--preset applies to --workload smallfiles only")
    return cli_options.build(model, mine)


def _engine_versions(workload: str) -> dict[str, str]:
    model = registry.options_model(workload)
    if model is SuiteOptions:
        return {"fio": FioEngine().version()}
    if model is S3Options:
        return {"s3load": S3Engine().version()}
    return {}


@click.command("run")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--workload", type=click.Choice(list(registry.WORKLOADS)), default="kb2014", show_default=True,
              help=WORKLOAD_HELP)
@click.option("--preset", type=click.Choice(list(PRESETS)), default=None,
              help="smallfiles: start from this preset [default: field-note-e, 104,857 x 100 KiB]; flags override it.")
@cli_options.click_options(SuiteOptions)
@cli_options.click_options(SmallFilesSpec)
@cli_options.click_options(S3Options)
@cli_options.click_options(MonitorOptions)
@click.option("--keep", is_flag=True, help="smallfiles: keep the tagged folder of files after the run.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@baseline_option
@results_option
def run_command(path: Path | None, workload: str, preset: str | None, keep: bool, as_json: bool, quiet: bool,
                baseline_ref: str | None, results: Path | None, **values: object) -> None:
    """Run a backup workload against PATH, sampling the host; keep and show the figures.

    Without PATH, a scratch directory is made in the current directory and removed afterwards.
    Everything the run writes in PATH is named backupbench-<run> and is always removed.
    """
    options = _workload_options(workload, preset, values)
    if workload == "s3" and path is not None:
        raise InputError("--workload s3 takes no PATH: it writes to --endpoint/--bucket",
                         "drop PATH (to measure a directory, serve it with MinIO in a recipe)")
    monitor = cli_options.build(MonitorOptions, cli_options.split(MonitorOptions, values)[0])
    # Resolve the baseline before measuring, so a typo fails in a second, not after the run.
    baseline = open_store(results)[1].load_run(baseline_ref) if baseline_ref else None
    host_facts = _engine_versions(workload)
    chosen = registry.build(workload, options)
    if keep:
        if not hasattr(chosen, "keep"):
            raise InputError(f"--keep does not apply to --workload {workload}")
        chosen.keep = True
    request = RunRequest(
        workload=chosen, results=results_dir(results), target=path,
        scratch_parent=Path.cwd(), monitor=monitor, host_facts=host_facts,
        on_closed=lambda run: finished_runs.append((open_store(results)[1], run.run_id)),
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
