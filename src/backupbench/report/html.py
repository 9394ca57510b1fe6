"""A stored run as one self-contained HTML page: the terminal's tables plus charts.

The page loads nothing: CSS is inline, charts are inline SVG (text drawn as paths, so no
fonts), there is no script, and a Content-Security-Policy forbids any fetch, so it opens the
same on an air-gapped repository server as anywhere else. All text from the run (targets,
notes, commands, settings) is escaped. No clock is read: the same run renders the same page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from backupbench import units
from backupbench.report.sweep_html import recipe_sweeps_html
from backupbench.report.fault_analysis import fault_reports
from backupbench.report.fault_chart import fault_timeline, rebuild_points, workload_segments
from backupbench.report.aging import aging_html
from backupbench.report.files import files_html
from backupbench.report.faults import comparison_rows, headings as fault_headings, rebuild_line
from backupbench.report.faults import rows as fault_rows, title as fault_title
from backupbench.analysis.compare import (first_write_penalty, layout_matrix, run_name, speed_changes, speed_text,
                                          target_line)
from backupbench.analysis.headline import run_headline
from backupbench.analysis.windows import backup_windows, restore_range
from backupbench.report import charts
from backupbench.report import html_page as page
from backupbench.report.compare_html import render_comparison, settings_differences_html
from backupbench.report.html_page import e
from backupbench.report.latency_charts import latency_html
from backupbench.report.hosts import host_timelines_html, hosts_chart_html, hosts_html
from backupbench.report.repository import verdict_headline
from backupbench.report.repository_html import plan_html
from backupbench.sizing.plan_model import RepositoryPlan
from backupbench.errors import InputError
from backupbench.sizing.recipe_plan import plan_of_run
from backupbench.report.palette import Colours
from backupbench.analysis.hosts import run_hosts
from backupbench.report.tables import OperationsTable, model_range_text, restore_range_text, run_tables
from backupbench.results.location import run_folder
from backupbench.results.runfiles import command_files, phase_samples
from backupbench.results.model import COMPLETE, RunRecord
from backupbench.workloads import capabilities

# ---------------------------------------------------------------------------------------------
# One run


def _header(run: RunRecord, missed: Sequence[str] = (), plan: str | None = None) -> str:
    facts = [
        ("label", run.label),
        ("kind", run.kind),
        ("status", run.status),
        ("started (UTC)", run.started_at.replace("+00:00", "").replace("T", " ")),
        ("finished (UTC)", (run.finished_at or "-").replace("+00:00", "").replace("T", " ")),
        ("host", " ".join(str(run.host.get(k, "")) for k in ("hostname", "kernel") if run.host.get(k))),
        ("target", target_line(run)),
    ]
    buffered = " (BUFFERED: results include the page cache)" if run.settings.get("buffered") else ""
    dl = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in facts if v)
    out = (f"<header>\n<h1>backupbench run {e(run.run_id)}</h1>\n"
           f'<p class="subtitle">{e(run.target)}{e(buffered)}</p>\n{headline_html(run, missed, plan)}'
           f'<dl class="facts">{dl}</dl>\n</header>\n')
    if run.status != COMPLETE:
        out += page.callout([f"run {run.status}" + (f": {run.error}" if run.error else "")],
                        "This run did not complete; its figures may be partial or void.", bad=True)
    return out


def headline_html(run: RunRecord, missed: Sequence[str] = (), plan: str | None = None) -> str:
    """The run in one sentence (analysis/headline.py), first on the page; `plan`: the verdict of
    the run's repository plan (report/repository.verdict_headline), when it has one."""
    found = run_headline(run, missed, plan)
    if found is None:
        return ""
    css = "run-headline bad" if found.bad else "run-headline"
    return f'<p class="{css}"><strong>{e(found.text)}.</strong></p>\n'


def _ops_table(model: OperationsTable) -> str:
    rows = []
    notes = page.Notes()
    for row in model.rows:
        if row.status != COMPLETE:
            rows.append([e(row.operation), e(row.pattern), f'<span class="status">{e(row.status)}</span>',
                         *[""] * (len(model.headings) - 1)])
        else:
            rows.append([e(row.operation), e(row.pattern), *(page.cell(cell, notes) for cell in row.cells)])
    table = page.table(["operation", model.pattern_heading, *model.headings], rows, caption=model.title,
                       numeric_from=2, notes=notes)
    return table + (f'<p class="table-note">{e(model.caption)}</p>\n' if model.caption else "")


def operations_html(run: RunRecord) -> str:
    """The terminal's tables (report/tables.py): fio operations, small-file phases, S3 phases."""
    return "".join(_ops_table(model) for model in run_tables(run))


def layouts_html(run: RunRecord) -> str:
    matrix = layout_matrix(run)
    if matrix is None:
        return ""
    rows = []
    notes = page.Notes()
    for phase in matrix.phases:
        rows.append([e(phase), *[page.noted(cell, notes) for cell in matrix.cells(phase)]])
    rows += [[page.noted(cell, notes) for cell in cells] for cells in comparison_rows(fault_reports(run), matrix.layouts)]
    verdicts = [v.text for v in map(matrix.verdict, matrix.phases) if v is not None]
    return (page.table(["phase", *matrix.layouts], rows, notes=notes,
                       caption="Layouts compared (effective MiB/s or files/s; faster/slower: against the first layout)")
            + "".join(f'<p class="headline verdict">Verdict: {e(text)}.</p>\n' for text in verdicts))


def summary_html(run: RunRecord, backup_size: int | None) -> str:
    parts = []
    restore = restore_range(run)
    if restore:
        parts.append(
            f'<p class="headline"><strong>Restore range: {restore_range_text(restore)} MiB/s</strong> '
            f"(unfragmented/sequential {e(units.format_rate(restore.best_bps))}, "
            f"fully fragmented/random {e(units.format_rate(restore.worst_bps))}){e(model_range_text(restore))}</p>\n")
    size = backup_size or run.settings.get("backup_size")
    if size:
        windows = backup_windows(run, size)
        if windows:
            sampled = any(w.interval_text() for w in windows)
            parts.append(page.table(["job", "hours", *(["95% interval"] if sampled else [])],
                                    [[e(w.label), f"{w.seconds / 3600:,.1f}", *([e(w.interval_text() or "-")]
                                                                               if sampled else [])] for w in windows],
                                    caption=f"Backup windows for {units.format_size(size)}"))
    penalty = first_write_penalty(run)
    if penalty is not None:
        parts.append(f'<p class="headline"><strong>First-write penalty:</strong> overwrite is {penalty:,.2f}x as fast '
                     "as the first write (1.00x = no allocation cost)</p>\n")
    return "".join(parts)


def baseline_html(run: RunRecord, baseline: RunRecord) -> str:
    """The settings in which the run and its baseline differ (flagged), then each phase against it."""
    names = [f"baseline {run_name(baseline)}", f"this run {run_name(run)}"]
    settings = settings_differences_html([baseline, run], names)
    notes = page.Notes()
    rows = [[e(row.operation), e(speed_text(row.figure, row.baseline)), e(speed_text(row.figure, row.current)),
             page.noted(row.wording, notes)] for row in speed_changes(run, baseline)]
    if not rows:
        return settings + f"<p>No operation of this run has a counterpart in baseline {e(run_name(baseline))}.</p>\n"
    return (settings + page.table(["phase", "baseline", "this run", "this run against the baseline"], rows,
                                  caption=f"Against baseline {run_name(baseline)}", notes=notes)
            + '<p class="table-note">faster/slower: this run\'s speed against the baseline\'s; '
              'only when the 95% intervals part; else no difference beyond noise; one sample: noise unknown '
              '(measure with --repeat 3)</p>\n')


def faults_html(run: RunRecord, folder: Path, colours: Colours | None = None) -> str:
    """Per layout with a fault: its table, the rebuild line, model warnings and the timeline."""
    parts = []
    colours = colours or Colours()
    for index, report in enumerate(fault_reports(run)):
        notes = page.Notes()
        parts.append(page.table(fault_headings(report), [[page.noted(c, notes) for c in cells]
                                                         for cells in fault_rows(report)],
                                caption=fault_title(report), notes=notes))
        parts.append(f'<p class="table-note">{e(rebuild_line(report))}</p>\n')
        warnings = report.model_warnings()
        if warnings:
            parts.append(page.callout(warnings, "Model and measurement disagree"))
        rebuild = report.record
        csv_path = folder / report.csv if report.csv else None
        points = rebuild_points(csv_path) if csv_path is not None and csv_path.is_file() else ([], [])
        figure = fault_timeline(f"{report.layout}: workloads and rebuild over time",
                                workload_segments(run, rebuild), points, rebuild.detail.get("phases") or [], colours)
        parts.append(_chart(figure, f"fault-{index}", f"Fault timeline of {report.layout}",
                            f"{report.layout}: each phase's effective MiB/s over the time it ran, the rebuild's "
                            f"percent (1 s samples of the array's own state; raw: {report.csv}), dashed: the "
                            "array changed state."))
    return "".join(parts)


def notes_html(run: RunRecord) -> str:
    return page.callout(run.all_notes, "Notes and warnings") if run.all_notes else ""


def _chart(figure, scope: str, label: str, caption: str = "") -> str:
    return "" if figure is None else page.figure(charts.inline_svg(figure, scope, label), caption)


def _kb2014_operations(run: RunRecord) -> bool:
    """Whether any workload of the run (as it stored them) measured KB2014's operations."""
    return any(found.kb2014_operations for found in capabilities.of_run(run).values())


def charts_html(run: RunRecord, colours: Colours | None = None) -> str:
    grouped = layout_matrix(run) is not None
    colours = colours or Colours()
    speed = _chart(charts.speed_figure(run, colours), "speed", "Effective speed" + (" by layout" if grouped else ""),
                   "Effective speed: the rate of backup data each job moves (KB2014 rules: synthetic full "
                   "counts read+write/2, reverse incremental /3)." if _kb2014_operations(run) else "")
    latency = _chart(charts.latency_figure(run), "latency", "p99 latency per operation",
                     "p99 of fio's total latency (submission + completion), per-file or per-request "
                     "latency for small-file and S3 phases.")
    hosts = hosts_chart_html(run, colours)
    if not (speed or latency or hosts):
        return "<p>No completed operation to chart.</p>\n"
    return speed + latency + hosts


def timelines_html(run: RunRecord, folder: Path, colours: Colours | None = None) -> str:
    parts = []
    colours = colours or Colours()
    for index, op in enumerate(run.operations):
        if not op.monitor_csv:
            continue
        samples = phase_samples(folder, op)
        series, path = samples.series, samples.path
        if series is None or path is None:
            parts.append(f"<p>{e(op.name)}: {e(samples.problem)}.</p>\n")
            continue
        devices = charts.phase_devices(run, op, series)
        figure = charts.timeline_figure(f"{op.name}: disks and CPU over time", series, devices, colours)
        if figure is None:
            parts.append(f'<p class="no-timeline">{e(op.name)}: {e(_too_short(len(series.elapsed)))}.</p>\n')
            continue
        relative = path.relative_to(folder.resolve())
        caption = (f"{op.name} ({op.pattern}): read+write MiB/s per member disk, stacked: {', '.join(devices) or 'no device'} "
                   f"(iostat rMB/s + wMB/s) and CPU %iowait, {len(series.elapsed)} samples; raw: {relative}")
        parts.append(_chart(figure, f"timeline-{index}", f"Monitor timeline of {op.name}", caption))
    return "".join(parts)


def _too_short(count: int) -> str:
    if not count:
        return "no monitor samples (the phase ended within one interval)"
    return (f"no timeline: only {count} monitor sample{'s' * (count != 1)} (fewer than {charts.MIN_TIMELINE_SAMPLES} "
            "show no shape over time; the phase's averages are in the table above)")


HOST_KEYS = ("hostname", "os", "kernel", "machine", "cpus", "memory_bytes", "python", "fio", "s3load")


def host_html(run: RunRecord) -> str:
    host = run.host
    pairs: list[tuple[str, Any]] = []
    for key in [*HOST_KEYS, *sorted(k for k in host if k not in HOST_KEYS)]:
        if key not in host or isinstance(host[key], (dict, list)):
            continue
        pairs.append((key, host[key]))
    parts = [page.kv_table(pairs, "Host")]
    for name, target in sorted(host.get("targets", {}).items()):
        parts.append(page.kv_table(page.flatten(target), f"Target ({name})"))
    stacks = host.get("device_stacks", {})
    if stacks:
        rows = [[e(name), e(stack.get("describe", "")), e(", ".join(stack.get("members", [])))]
                for name, stack in sorted(stacks.items())]
        parts.append(page.table(["where", "device stack", "member disks"], rows, caption="Device stacks sampled",
                            numeric_from=99))
    others = {k: v for k, v in host.items() if isinstance(v, (dict, list)) and k not in ("targets", "device_stacks")}
    if others:
        parts.append(page.kv_table(page.flatten(others), "Other host facts"))
    return "".join(parts)


def settings_html(run: RunRecord) -> str:
    return page.kv_table(page.flatten(run.settings)) or "<p>No settings stored.</p>\n"


def commands_html(folder: Path) -> str:
    """Every commands.txt of the run (the run folder's, then each layout's), verbatim."""
    if not folder.is_dir():
        return f"<p>The run folder {e(folder)} is not here; commands and monitor timelines need it.</p>\n"
    parts = []
    for where, text in command_files(folder):
        heading = "" if str(where) == "." else f"<h3>{e(where)}</h3>\n"
        lines = "".join(f'<span class="cmd">{e(line)}</span>' for line in text.splitlines())
        parts.append(f'{heading}<pre class="commands">{lines}</pre>\n')
    if not parts:
        return "<p>No commands.txt in the run folder.</p>\n"
    return ("<p>Exactly what ran, in order (the job files and raw output sit next to them in "
            f"<code>{e(folder)}</code>):</p>\n" + "".join(parts))


def run_plan(run: RunRecord) -> RepositoryPlan | InputError | None:
    """The plan of the recipe's [policy] at the run's speeds (None without one), or why the run's
    figures cannot make it (a speed neither measured nor modelled). Worked out once per page: the
    headline and the plan's section both read it, and finding what would change a rejected
    candidate plans it again many times."""
    try:
        return plan_of_run(run)
    except InputError as exc:
        return exc


def repository_plan_html(found: RepositoryPlan | InputError | None) -> str:
    """The plan's section (report/repository_html.py), why there is none, or '' without a [policy]."""
    if isinstance(found, InputError):
        return page.callout([f"{found.message} ({found.fix})" if found.fix else found.message], "No plan", bad=True)
    return "" if found is None else plan_html(found)


def render(run: RunRecord, *, results_dir: Path, baseline: RunRecord | None = None,
           backup_size: int | None = None, missed: Sequence[str] = ()) -> str:
    """The whole page for one run. results_dir: where the run folder (monitor CSVs,
    commands.txt) lives; backup_size (bytes) adds backup windows; baseline adds slowdowns;
    missed: the expectations (`--expect`) the run missed, for the headline."""
    folder = run_folder(Path(results_dir), run.run_id)
    matrix = layout_matrix(run)
    # Layouts and hosts first: each keeps one colour in every chart, whichever draws it first.
    colours = Colours([*(matrix.layouts if matrix else ()), *run_hosts(run)])
    found = run_plan(run)
    body = [_header(run, missed, verdict_headline(found) if isinstance(found, RepositoryPlan) else None)]
    plan = repository_plan_html(found)
    if plan:  # the decision the run was made for, before the figures it was made from
        body.append(page.section("Repository plan ([policy] at this run's speeds)", plan, "repository-plan"))
    results = (operations_html(run) + hosts_html(run) + layouts_html(run) + notes_html(run)
               + summary_html(run, backup_size) + files_html(run, folder))
    body.append(page.section("Results", results, "results"))
    aging = aging_html(run, folder, colours)
    if aging:
        body.append(page.section("The repository over its life (simulated days)", aging, "aging"))
    faults = faults_html(run, folder, colours)
    if faults:
        body.append(page.section("Degraded and rebuilding", faults, "faults"))
    body.append(page.section("Charts", charts_html(run, colours), "charts"))
    sweeps = recipe_sweeps_html(run, colours)
    if sweeps:  # a recipe entry's `sweep` key: each grid with its chart (report/sweep_html.py)
        body.append(page.section("Sweeps", sweeps, "sweeps"))
    latency = latency_html(run, folder) if folder.is_dir() else ""
    if latency:
        body.append(page.section("Latency per phase (histogram, and each second)", latency, "latency"))
    if baseline is not None:
        body.append(page.section(f"Against baseline {run_name(baseline)}", baseline_html(run, baseline), "baseline"))
    timelines = timelines_html(run, folder, colours) if folder.is_dir() else ""
    if timelines:
        body.append(page.section("Monitor timelines (1 s samples per phase)", timelines, "monitor"))
    per_host = host_timelines_html(run, folder, colours) if folder.is_dir() else ""
    if per_host:
        body.append(page.section("Per-host timelines (1 s samples from each host's agent)", per_host,
                                 "host-timelines"))
    body.append(page.section("Host", host_html(run), "host"))
    body.append(page.section("Settings", settings_html(run), "settings"))
    body.append(page.section("Commands", commands_html(folder), "commands"))
    return page.document(f"backupbench run {run.run_id} — {run.target}", "".join(body))


# ---------------------------------------------------------------------------------------------
# Several runs: report/compare_html.py (imported here for callers that render through this module)

__all__ = ["render", "render_comparison"]
