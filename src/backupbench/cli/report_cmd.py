"""`backupbench report [RUN]...`: a self-contained HTML page of stored runs, with charts.

One RUN: the run's tables, charts, monitor timelines, host, settings and commands.
Several RUNs (report/compare_html.py): the settings in which they differ, a verdict per phase,
speeds and p99 latencies side by side, per-phase timelines of every run.
"""

from __future__ import annotations

from pathlib import Path

import click

from backupbench.analysis.options import ShowOptions
from backupbench.cli import options as cli_options
from backupbench.cli.common import Gate, expect_option, open_store, results_option
from backupbench.analysis.compare import require_common_phase, run_name
from backupbench.errors import InputError, ToolMissingError
from backupbench.paths import check_length
from backupbench.results.model import RunRecord


def default_file_name(runs: list[RunRecord]) -> str:
    ids = [run.run_id for run in runs]
    if len(ids) == 1:
        return f"report-{ids[0]}.html"
    shown = "_".join(ids) if len(ids) <= 3 else f"{ids[0]}-and-{len(ids) - 1}-more"
    return f"report-compare-{shown}.html"


def _renderer() -> tuple:
    # Imported here: matplotlib takes a while to import and only this command needs it.
    try:
        from backupbench.report import compare_html, html, html_page
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == "matplotlib":
            raise ToolMissingError("matplotlib is not installed (the report's charts need it)",
                                   "install it into backupbench's environment: pip install matplotlib") from exc
        raise
    return html, compare_html, html_page


def _target_file(html_file: Path | None, runs: list[RunRecord]) -> Path:
    path = html_file if html_file is not None else Path.cwd() / default_file_name(runs)
    path = path.expanduser()
    check_length(path.absolute(), "--html", "give a shorter path, e.g. --html report.html")
    if path.is_dir():
        raise InputError(f"--html {path} is a directory", "give a file name, e.g. --html report.html")
    if not path.parent.is_dir():
        raise InputError(f"cannot write {path}: folder {path.parent} does not exist", "create it or choose another path")
    return path


@click.command("report")
@click.argument("run_refs", metavar="[RUN]...", nargs=-1)
@click.option("--html", "html_file", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="Where to write the page (default: report-<run>.html in the current folder).")
@click.option("--baseline", "baseline_ref", default=None, metavar="RUN",
              help="Add each phase against this earlier run, x faster / x slower (one RUN only).")
@click.option("--sweep", "sweep_ref", default=None, metavar="ID",
              help="The page of a `backupbench sweep` instead of a run: sweep-<id> as it printed it, or latest.")
@expect_option
@cli_options.click_options(ShowOptions)
@results_option
def report_command(run_refs: tuple[str, ...], html_file: Path | None, baseline_ref: str | None,
                   sweep_ref: str | None, results: Path | None, expectations: list, **values: object) -> None:
    """Write a self-contained HTML report (tables + charts, no remote resources) of a stored run.

    RUN: an id, a unique prefix of one, a --label, or 'latest' (the default). Several RUNs: a comparison
    of the same operations across them. --sweep ID: a sweep's grid, its charts and verdicts.
    """
    if sweep_ref is not None:
        if run_refs or baseline_ref or expectations:
            raise InputError("--sweep takes no RUN, --baseline or --expect", "report the sweep alone")
        _sweep_page(sweep_ref, html_file, results)
        return
    size = cli_options.build(ShowOptions, values).backup_size
    refs = list(run_refs) or ["latest"]
    if len(refs) > 1 and baseline_ref:
        raise InputError("--baseline applies to one RUN", "drop --baseline: with several RUNs each is shown side by side")
    directory, store = open_store(results)
    runs = [store.load_run(ref) for ref in refs]
    seen: dict[str, str] = {}
    for ref, run in zip(refs, runs):
        if run.run_id in seen:
            raise InputError(f"{ref!r} and {seen[run.run_id]!r} are the same run {run.run_id}", "give each run once")
        seen[run.run_id] = ref
    baseline = store.load_run(baseline_ref) if baseline_ref else None
    if baseline is not None:
        require_common_phase([op.name for op in runs[0].operations], f"run {run_name(runs[0])}", baseline)
    path = _target_file(html_file, runs)
    html, compare_html, html_page = _renderer()
    if expectations and len(runs) > 1:
        raise InputError("--expect applies to one RUN", "report each run on its own to check it")
    gate = Gate.check(expectations, runs[0]) if expectations else None
    if len(runs) == 1:
        missed = [f"{r.expectation.text} (measured {r.measured_text})" for r in (gate.results if gate else []) if not r.met]
        page = html.render(runs[0], results_dir=directory, baseline=baseline, backup_size=size, missed=missed)
    else:
        page = compare_html.render_comparison(runs, backup_size=size, results_dir=directory)
    try:
        written = html_page.write(path, page)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}", "choose another --html path") from exc
    click.echo(str(written.resolve()))
    if gate is not None:
        gate.print_table()
        gate.finish()



def _sweep_page(ref: str, html_file: Path | None, results: Path | None) -> None:
    """`report --sweep ID`: the sweep's runs read back (Store.sweep_runs), drawn as one page."""
    from backupbench.analysis.sweep import from_runs

    runs = open_store(results)[1].sweep_runs(ref)
    data = from_runs(runs)
    path = _target_file(html_file or Path.cwd() / f"report-{data.sweep_id}.html", runs)
    _, _, html_page = _renderer()
    from backupbench.report import sweep_html  # matplotlib's import, checked by _renderer first

    try:
        written = html_page.write(path, sweep_html.render_sweep(data, runs))
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}", "choose another --html path") from exc
    click.echo(str(written.resolve()))
