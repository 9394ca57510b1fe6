"""`backupbench sweep [PATH] --over PARAM=V1,V2,... [--over ...]`: one workload over a grid of
its own options' values, each point a run of its own through the pipeline `run` uses
(runner/pipeline.execute), stored with its samples and labelled `sweep-<id> iodepth=4 jobs=2`;
at the end the grid as a table (and with --html a page with its chart), the best point, and
where adding parallelism stops paying (analysis/sweep.py).

Why each point is a run of its own rather than one run of many phases: a point is then
everything a run is (`show`, `report`, `--baseline` against another run, the history), and a
sweep stopped half-way keeps every point it finished; the runs carry the sweep's id and grid
in their settings, which is how `report --sweep ID` finds them again.

Every value is checked by the workload's own options model before the first point runs, as
`run` would check it as a flag: a typo, a value the model refuses, or a combination it refuses
(16 jobs of 1 MiB in an 8 MiB file) costs a second, not the points before it.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import click

from backupbench.analysis import sweep as sweep_analysis
from backupbench.cli import options as cli_options
from backupbench.cli.common import finished_runs, measured, open_store, print_document, results_option, stderr, stdout
from backupbench.cli.progress import QuietReporter, RichReporter
# run's own helpers, so that a sweep's flags, PATHs and default samples are exactly run's.
from backupbench.cli.run_cmd import PRESETS, WORKLOAD_HELP, _paths, _samples, _with_workload_options
from backupbench.cli.run_cmd import _workload_options
from backupbench.errors import BackupbenchError, InputError, NotFoundError
from backupbench.monitor.options import MonitorOptions
from backupbench.report.sweep import sweep_view
from backupbench.results.location import results_dir
from backupbench.results.model import RunRecord
from backupbench.runner.pipeline import RunRequest, execute
from backupbench.workloads import sweep
from backupbench.workloads.base import MAX_REPEAT, Definition
from backupbench.workloads.registry import WORKLOADS


def parse_over(texts: tuple[str, ...]) -> dict[str, list[str]]:
    """`--over iodepth=1,4,16 --over jobs=1,2` -> {'iodepth': ['1', '4', '16'], 'jobs': ['1', '2']}."""
    grid: dict[str, list[str]] = {}
    for text in texts:
        name, equals, values = text.partition("=")
        if not equals or not name.strip():
            raise InputError(f"--over {text!r}: write PARAMETER=VALUE,VALUE,...", "e.g. --over iodepth=1,4,16")
        name = sweep.parameter(name)
        if name in grid:
            raise InputError(f"--over {name} is given twice", "give each parameter once, with all its values")
        grid[name] = [value.strip() for value in values.split(",")]
    try:
        sweep.check_grid(grid)
    except sweep.SweepRefused as refused:
        raise InputError(f"--over: {refused}", "e.g. --over iodepth=1,4,16 --over jobs=1,2") from None
    return grid


def _given(model: Any, point: sweep.Point) -> dict[str, Any]:
    """The point's values as a command line gives them (a switch as click gives it: True/False)."""
    values = point.given_values()
    for name, text in values.items():
        if model.model_fields[name].annotation is bool and text in ("true", "false"):
            values[name] = text == "true"
    return values


def plan_points(definition: Definition, preset: str | None, grid: dict[str, list[str]],
                values: dict[str, Any]) -> list[tuple[sweep.Point, Any]]:
    """Each point's options, every value and point checked now; InputError naming the one refused."""
    named = [name for name in grid if values.get(name) not in (None, False)]
    if named:
        flag = cli_options.flag_name(named[0])
        raise InputError(f"{flag} and --over {named[0]}=... both set {named[0]}", f"drop {flag}, or sweep its value")
    try:
        sweep.check_parameters(list(grid), definition.name, definition.options,
                               {name: d.options for name, d in WORKLOADS.items()}, definition.parallelism)
    except sweep.SweepRefused as refused:
        raise InputError(f"--over {refused.where}: {refused}", "every option: backupbench run --help") from None

    def build(point: sweep.Point) -> Any:
        try:
            return _workload_options(definition, preset, {**values, **_given(definition.options, point)})
        except InputError as exc:
            message = exc.message.removeprefix("options: ")  # a whole-model refusal: the point says where
            for name in point.as_dict():
                message = message.removeprefix(f"{cli_options.flag_name(name)}: ")
            raise ValueError(message) from None

    try:
        return sweep.check_points(grid, build, definition.phases)
    except sweep.SweepRefused as refused:
        raise InputError(f"--over: {refused}", "sweep values the workload takes (backupbench run --help)") from None


def _run_points(requests: list[tuple[sweep.SweepRecord, RunRequest]],
                quiet: bool) -> tuple[list[RunRecord], BaseException | None]:
    """Each point through the pipeline, in order; the runs stored, and what stopped the sweep (a
    point that failed, a stop signal) so that the points measured are still shown."""
    runs: list[RunRecord] = []
    for record, request in requests:
        stderr.print(f"sweep-{record.sweep_id}: point {record.number} of {len(requests)}: {record.point.text}",
                     highlight=False)
        try:
            if quiet:
                run, left = measured(lambda: execute(request, QuietReporter()))  # noqa: B023
            else:
                with RichReporter(stderr) as reporter:
                    run, left = measured(lambda: execute(request, reporter))  # noqa: B023
        except BackupbenchError as exc:
            return runs, exc
        runs.append(run)
        if left is not None:
            return runs, left
    return runs, None


def _stored(results: Path | None, sweep_id: str) -> list[RunRecord]:
    """The sweep's runs as stored (a point that failed too: the store has it), [] for none."""
    try:
        return open_store(results)[1].sweep_runs(sweep_id)
    except NotFoundError:
        return []


def _write_html(html_file: Path, data: sweep_analysis.SweepData, runs: list[RunRecord]) -> None:
    from backupbench.cli.report_cmd import _renderer  # matplotlib: only when a page is asked for

    _, _, html_page = _renderer()
    from backupbench.report import sweep_html

    written = html_page.write(html_file, sweep_html.render_sweep(data, runs))
    stderr.print(f"page: {written.resolve()}", highlight=False)


@click.command("sweep")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path), metavar="[PATH]...")
@click.option("--workload", type=click.Choice(list(WORKLOADS)), default="kb2014", show_default=True,
              help=WORKLOAD_HELP)
@click.option("--over", "over", multiple=True, required=True, metavar="PARAM=V1,V2,...",
              help="A parameter and the values it takes, e.g. --over iodepth=1,4,16 --over jobs=1,2 (any option of "
                   "the workload, as its flag without -- or its recipe key); every combination is a point, the "
                   "first --over varying slowest.")
@click.option("--preset", type=click.Choice(PRESETS), default=None, help="Start every point from this preset.")
@_with_workload_options
@cli_options.click_options(MonitorOptions)
@click.option("--repeat", type=click.IntRange(1, MAX_REPEAT), default=None, metavar="N",
              help="Measure each point's phases N times, so that a step's gain is judged against its noise "
                   "[default: as run: kb2014 without --runtime 3 samples of 3 s, else 1].")
@click.option("--json", "as_json", is_flag=True, help="Print the sweep as JSON on stdout (kind backupbench.sweep).")
@click.option("--html", "html_file", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="Also write the sweep's page (tables and charts) to FILE.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@results_option
def sweep_command(paths: tuple[Path, ...], workload: str, over: tuple[str, ...], preset: str | None,
                  repeat: int | None, as_json: bool, html_file: Path | None, quiet: bool, results: Path | None,
                  **values: object) -> None:
    """Run a workload once per point of a grid of its options (iodepth x jobs, streams x object size).

    Each point is a run of its own, stored with its samples and labelled sweep-<id> PARAM=VALUE...;
    the end shows the grid, the best point and where adding parallelism stops paying (a step's
    gain within the noise). `backupbench report --sweep sweep-<id>` draws it again with its charts.
    """
    definition = WORKLOADS[workload]
    grid = parse_over(over)
    path, values = _paths(definition, paths, values)
    repeat, values = _samples(definition, repeat, values)
    built = plan_points(definition, preset, grid, values)
    if not definition.needs_directory and not definition.reads_files and path is not None:
        raise InputError(f"--workload {workload} takes no PATH: it writes to --endpoint/--bucket", "drop PATH")
    monitor = cli_options.build(MonitorOptions, cli_options.split(MonitorOptions, values)[0])
    sweep_id = secrets.token_hex(4)
    parallel = sweep.parallel(list(grid), definition.parallelism)
    requests = []
    for number, (point, options) in enumerate(built, 1):
        record = sweep.SweepRecord(sweep_id, workload, grid, parallel, point, number)
        chosen = definition.build(options, None)  # every point built before the first runs
        requests.append((record, RunRequest(
            workload=chosen, results=results_dir(results), target=path, scratch_parent=Path.cwd(), monitor=monitor,
            host_facts=chosen.engine_versions(), label=record.label, repeat=repeat, settings=record.stored(),
            on_closed=lambda run: finished_runs.append((open_store(results)[1], run.run_id)),
            reads=tuple(Path(name) for name in options.files) if definition.reads_files else ())))
    _, stopped = _run_points(requests, quiet)
    runs = _stored(results, sweep_id)
    if runs:
        data = sweep_analysis.from_runs(runs)
        if as_json:
            print_document("sweep", sweep_analysis.document(data))
        else:
            stdout.print(sweep_view(data))
            stdout.print(f"page with charts: backupbench report --sweep sweep-{sweep_id}", highlight=False)
        if html_file is not None:
            _write_html(html_file, data, runs)
    if stopped is not None:
        raise stopped
