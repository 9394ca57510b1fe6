"""`backupbench report RUN RUN...`: several runs on one self-contained page, compared so the
page cannot mislead: the settings in which they differ first and flagged, a verdict sentence
naming the winner of each phase, the margin and the evidence, then speeds and p99 latencies
with only each row's best cell marked, per-phase timelines of every run's member disks, and
what each run was. Runs are called by their label (their id when they have none). A phase
a run measured once names no winner and marks no best cell: one sample says nothing of the
noise (analysis/noise.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from backupbench import units
from backupbench.analysis.compare import (
    SAME_WITHIN, Verdict, overall_verdict, p99_label, phase_p99, phase_verdict, relative_speed, run_names,
    target_line,
)
from backupbench.analysis.noise import REPEAT_FIX
from backupbench.analysis.settings_diff import differing_names, settings_differences
from backupbench.analysis.windows import WINDOW_OPERATIONS, backup_windows, effective_speeds, restore_range
from backupbench.report.palette import Colours
from backupbench.report import charts
from backupbench.report import html_page as page
from backupbench.report.html_page import e
from backupbench.report.tables import restore_range_text
from backupbench.results.location import run_folder
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
from backupbench.results.runfiles import phase_samples

BEST_STYLE = "background:#dff0d8;padding:0 3px"
ONE_SAMPLE_UNMARKED = f"; none marked where a run measured the operation once: one sample names no best, {REPEAT_FIX}"


def _chart(figure, scope: str, label: str, caption: str = "") -> str:
    return "" if figure is None else page.figure(charts.inline_svg(figure, scope, label), caption)


def settings_differences_html(runs: Sequence[RunRecord], names: Sequence[str]) -> str:
    """The settings in which the runs differ, flagged; or one line saying they are the same."""
    differences = settings_differences(runs)
    if not differences:
        return (f'<p class="settings-same">Same settings: {e(" and ".join(names))} ran the same workload '
                "the same way.</p>\n")
    rows = [[f'<span class="strong">&#9888; {e(d.setting)}</span>', *[e(v) for v in d.values]] for d in differences]
    return ('<div class="callout bad settings-differ"><strong>Settings differ: these figures measure the '
            "settings as well as the storage</strong>"
            + page.table(["setting", *names], rows, numeric_from=99) + "</div>\n")


def _operations(runs: Sequence[RunRecord]) -> list[str]:
    """Completed operations of any of the runs, in first-seen order."""
    names: list[str] = []
    for run in runs:
        names += [op.name for op in run.operations if op.status == COMPLETE and op.name not in names]
    return names


def _op(run: RunRecord, name: str) -> OperationRecord | None:
    return next((op for op in run.operations if op.name == name and op.status == COMPLETE), None)


def _marked(text: str, best: bool, notes: page.Notes | None = None) -> str:
    shown = page.noted(text, notes) if notes is not None else e(text)
    if not best:
        return shown
    return f'<span class="strong best" style="{BEST_STYLE}" title="best in this row">{shown}</span>'


def _best_cells(values: Sequence[float | None], ops: Sequence[OperationRecord | None],
                higher_is_better: bool) -> set[int]:
    """The best value's column, and any within SAME_WITHIN of it (a tie is no win); none when a
    run in the row measured it once, since one sample names no best (noise.verdict)."""
    present = [v for v in values if v]
    if len(present) < 2 or any(op is not None and op.sample_count < 2 for op, v in zip(ops, values) if v):
        return set()
    best = max(present) if higher_is_better else min(present)
    return {i for i, v in enumerate(values) if v and max(v, best) / min(v, best) < 1 + SAME_WITHIN}


def _speed_rows(runs: Sequence[RunRecord], operations: Sequence[str], notes: page.Notes) -> list[list[str]]:
    """Each operation's effective MiB/s per run; a one-sample comparison's caveat in `notes`."""
    rows = []
    for name in operations:
        ops = [_op(run, name) for run in runs]
        values = [op.figures.get("effective_bw") if op else None for op in ops]
        reference = next((i for i, v in enumerate(values) if v), None)
        best = _best_cells(values, ops, higher_is_better=True)
        cells = [e(name)]
        for index, value in enumerate(values):
            base = values[reference] if reference is not None else None
            against = (f" ({relative_speed(ops[index].sample_values('effective_bw'), ops[reference].sample_values('effective_bw'))})"
                       if value and base and index != reference and reference is not None else "")
            cells.append(_marked(f"{value / units.MiB:,.1f}{against}", index in best, notes) if value else "-")
        rows.append(cells)
    return [row for row in rows if any(cell != "-" for cell in row[1:])]


def _p99_rows(runs: Sequence[RunRecord], operations: Sequence[str]) -> list[list[str]]:
    rows = []
    for name in operations:
        ops = [_op(run, name) for run in runs]
        found = [phase_p99(op.figures) if op else None for op in ops]
        if not any(found):
            continue
        values = [pair[1] if pair else None for pair in found]
        best = _best_cells(values, ops, higher_is_better=False)
        kinds = sorted({p99_label(pair[0]) for pair in found if pair})
        cells = [e(f"{name} ({', '.join(kinds)})")]
        cells += [_marked(f"{v / 1e6:,.2f}", i in best) if v else "-" for i, v in enumerate(values)]
        rows.append(cells)
    return rows


def verdicts_of(runs: Sequence[RunRecord], names: Sequence[str], operations: Sequence[str]) -> list[Verdict]:
    """Each operation that two or more runs completed: who won it, by how much, and why."""
    found = []
    for operation in operations:
        entries = [(name, op) for name, op in ((name, _op(run, operation)) for name, run in zip(names, runs)) if op]
        verdict = phase_verdict(operation, entries)
        found += [verdict] if verdict is not None else []
    return found


def verdict_html(runs: Sequence[RunRecord], names: Sequence[str], operations: Sequence[str]) -> str:
    verdicts = verdicts_of(runs, names, operations)
    if not verdicts:
        return "<p>No phase was measured by two of these runs: there is nothing to decide.</p>\n"
    lines = [f'<p class="headline verdict">{e(v.text)}.</p>\n' for v in verdicts]
    overall = overall_verdict(verdicts)
    if overall:
        lines.insert(0, f'<p class="headline verdict"><strong>{e(overall)}.</strong></p>\n')
    differences = settings_differences(runs)
    if differences:
        lines.append(page.callout([f"the runs differ in {differing_names(differences)}: part of each margin may "
                                   "come from those settings, not from the storage"], "Caution"))
    return "".join(lines)


def _table_or(rows: list[list[str]], headings: list[str], caption: str, note: str, empty: str,
              notes: page.Notes | None = None) -> str:
    if not rows:
        return f"<p>{e(empty)}</p>\n"
    return page.table(headings, rows, caption=caption, notes=notes) + f'<p class="table-note">{e(note)}</p>\n'


def timelines_html(runs: Sequence[RunRecord], names: Sequence[str], operations: Sequence[str],
                   results_dir: Path) -> str:
    """One chart per phase: every run's member disks over the phase, one line per run."""
    parts = []
    for index, name in enumerate(operations):
        lines, missing = [], []
        for label, run in zip(names, runs):
            op = _op(run, name)
            sampled = op is not None and op.monitor_csv
            samples = phase_samples(run_folder(results_dir, run.run_id), op) if sampled else None
            series = samples.series if samples else None
            lines.append((label, series, charts.phase_devices(run, op, series) if op and series else []))
            missing += [label] if series is None else []
        short = [label for label, series, _ in lines if series is not None
                 and len(series.elapsed) < charts.MIN_TIMELINE_SAMPLES]
        figure = charts.runs_timeline_figure(f"{name}: member disks over time", lines, Colours(names))
        caption = (f"{name}: the read+write MiB/s of each run's member disks (summed) and their mean %util, "
                   "1 s samples" + (f"; no samples for {', '.join(missing)}" if missing else "")
                   + (f"; not drawn for {', '.join(short)}: fewer than {charts.MIN_TIMELINE_SAMPLES} samples "
                      "show no shape over time" if short else ""))
        if figure is None and short:
            parts.append(f"<p>{e(caption)}.</p>\n")
        parts.append(_chart(figure, f"compare-timeline-{index}", f"Timeline of {name} in every run", caption))
    return "".join(parts) or "<p>No monitor samples in these runs' folders.</p>\n"


def _windows_html(runs: Sequence[RunRecord], names: Sequence[str], backup_size: int) -> str:
    windows = [{w.operation: w.seconds for w in backup_windows(run, backup_size)} for run in runs]
    rows = [[e(label), *[f"{w[op] / 3600:,.1f}" if op in w else "-" for w in windows]]
            for op, label in WINDOW_OPERATIONS if any(op in w for w in windows)]
    return page.table(["job", *names], rows) if rows else ""


def runs_html(runs: Sequence[RunRecord], names: Sequence[str]) -> str:
    labelled = any(run.label for run in runs)
    facts = []
    for name, run in zip(names, runs):
        restore = restore_range(run)
        size = run.settings.get("file_size") or run.settings.get("size")
        facts.append([e(name), *([f"<code>{e(run.run_id)}</code>"] if labelled else []),
                      e(run.started_at.replace("+00:00", "").replace("T", " ")), e(run.kind), e(run.status), e(target_line(run)),
                      e(run.host.get("hostname", "")), e(units.format_size(size) if size else "-"),
                      e(restore_range_text(restore) if restore else "-")])
    headings = ["run", *(["id"] if labelled else []), "started (UTC)", "kind", "status", "target", "host", "test file",
                "restore MiB/s (low–high)"]
    return page.table(headings, facts, numeric_from=len(headings) - 2)


def _sections(runs: Sequence[RunRecord], names: list[str], backup_size: int | None,
              results_dir: Path | None) -> list[tuple[str, Callable[[], str], str]]:
    operations = _operations(runs)
    once = ONE_SAMPLE_UNMARKED if any(op.sample_count < 2 for run in runs for op in run.operations if op.status == COMPLETE) else ""
    speed_note = ("x faster / x slower: against the first run that has the operation, only when the 95% "
                  "intervals part (else: no difference beyond noise; one sample: noise unknown); "
                  f"marked: the best of the row (and any within {SAME_WITHIN:.0%} of it){once}")
    notes = page.Notes()
    return [
        ("Settings", lambda: settings_differences_html(runs, names), "settings"),
        ("Verdict", lambda: verdict_html(runs, names, operations), "verdict"),
        ("Effective speed", lambda: _table_or(_speed_rows(runs, operations, notes), ["operation", *names],
                                              "Effective MiB/s", speed_note,
                                              "No completed operation with an effective speed.", notes)
         + _chart(charts.comparison_figure(runs, Colours(names)), "compare", "Effective speed across runs"), "speed"),
        ("p99 latency", lambda: _table_or(_p99_rows(runs, operations), ["operation", *names], "p99 latency (ms)",
                                          f"marked: the lowest of the row (within {SAME_WITHIN:.0%} counts as the "
                                          f"same){once}",
                                          "No p99 latency recorded in these runs."), "latency"),
        ("Timelines per phase", lambda: timelines_html(runs, names, operations, results_dir) if results_dir else "",
         "timelines"),
        (f"Backup windows for {units.format_size(backup_size or 0)} (hours)",
         lambda: _windows_html(runs, names, backup_size) if backup_size else "", "windows"),
        ("Runs", lambda: runs_html(runs, names), "runs"),
    ]


def render_comparison(runs: Sequence[RunRecord], *, backup_size: int | None = None,
                      results_dir: Path | None = None) -> str:
    """The whole page for several runs; results_dir (where the run folders are) adds the
    per-phase timelines, backup_size (bytes) the backup windows."""
    if not runs:
        raise ValueError("render_comparison needs at least one run")
    names = run_names(runs)
    body = [f"<header>\n<h1>backupbench: {len(runs)} runs compared</h1>\n"
            f'<p class="subtitle">{e(", ".join(names))}</p>\n</header>\n']
    unlike = sorted({run.kind for run in runs})
    if len(unlike) > 1:
        body.append(page.callout([f"kinds: {', '.join(unlike)}"], "These runs measured different workloads."))
    if not any(effective_speeds(run) for run in runs):
        body.append(page.callout(["none of the runs has a completed operation"], "Nothing to compare."))
    for title, build, anchor in _sections(runs, names, backup_size, results_dir):
        content = build()
        if content:
            body.append(page.section(title, content, anchor))
    notes = [f"{name}: {note}" for name, run in zip(names, runs) for note in run.all_notes]
    notes += [f"{name}: run {run.status}" + (f": {run.error}" if run.error else "")
              for name, run in zip(names, runs) if run.status != COMPLETE]
    if notes:
        body.append(page.section("Notes and warnings", page.callout(notes, "From the runs"), "notes"))
    return page.document(f"backupbench: {', '.join(names)} compared", "".join(body))
