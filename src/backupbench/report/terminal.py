"""Rich renderables for a run: the operations tables (drawn from report/tables.py), restore range,
backup windows, notes."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from backupbench import units
from backupbench.analysis.compare import first_write_penalty, layout_matrix, run_name, speed_changes, speed_text
from backupbench.analysis.settings_diff import SettingDifference, settings_differences
from backupbench.analysis.windows import backup_windows, layouts_of, restore_range
from backupbench.report.fault_analysis import fault_reports
from backupbench.report.faults import comparison_rows, fault_table
from backupbench.report.aging import aging_tables
from backupbench.report.files import files_table
from backupbench.report.hosts import hosts_renderables
from backupbench.recipe import naming
from backupbench.report.tables import SPREAD_HEADING, OperationsTable, Styled, mib, model_range_text, restore_range_text, run_tables
from backupbench.results.model import COMPLETE, RunRecord
from backupbench.workloads import phase_kinds


def _rich(cell: str) -> str | Text:
    return Text(cell, style=cell.style) if isinstance(cell, Styled) else cell


def _table(model: OperationsTable, fitted: bool = False) -> Table:
    """`fitted`: each figure's column as narrow as its figures or its heading's longest word (the
    heading wraps), for a terminal the table would not fit otherwise."""
    table = Table(title=model.title, title_justify="left", caption=model.caption, caption_justify="left")
    # rich shortens the widest wrappable cells with an ellipsis, and an interval cut to
    # "710.4–1,9…" reads as another figure: names and intervals (the CV on a line of its own) do
    # not wrap, and on a narrow terminal the figures' headings wrap first.
    spread = model.headings.index(SPREAD_HEADING) if SPREAD_HEADING in model.headings else None
    table.add_column("operation", no_wrap=spread is not None)
    table.add_column(model.pattern_heading)
    cells = [[_spread_lines(cell) if index == spread else cell for index, cell in enumerate(row.cells)]
             for row in model.rows]
    for index, heading in enumerate(model.headings):
        narrowest = max([len(line) for row in cells for line in str(row[index]).splitlines()]
                        + [len(word) for word in heading.split()])
        table.add_column(heading, justify="right", no_wrap=index == spread, max_width=narrowest if fitted else None)
    for row, shown in zip(model.rows, cells):
        if row.status != COMPLETE:
            table.add_row(row.operation, row.pattern, Text(row.status, style="yellow"), *[""] * (len(model.headings) - 1))
        else:
            table.add_row(row.operation, row.pattern, *map(_rich, shown))
    return table


UNBOUNDED = 10_000   # a width to measure a table's natural width against (rich clamps to the one given)


class _FittedTable:
    """An operations table drawn as is where it fits, else, when it has intervals to keep whole,
    with its figures' headings wrapped."""

    def __init__(self, model: OperationsTable):
        self.model = model

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = _table(self.model)
        if SPREAD_HEADING in self.model.headings and Measurement.get(console, options.update_width(UNBOUNDED), table).maximum > options.max_width:
            table = _table(self.model, fitted=True)
        yield table


def _spread_lines(cell: str) -> str:
    """'3: 290.1–335.2, CV 3.1%' as two lines, the interval whole on the first."""
    lines = cell.replace(", CV ", "\nCV ", 1)
    return Styled(lines, cell.style) if isinstance(cell, Styled) else lines


def operations_tables(run: RunRecord) -> list[RenderableType]:
    return [_FittedTable(model) for model in run_tables(run)]


def settings_table(differences: list[SettingDifference], names: list[str]) -> RenderableType:
    """Settings that differ between compared runs, flagged; printed above every comparison."""
    if not differences:
        return Text(f"Same settings: {' and '.join(names)} ran the same workload the same way.")
    table = Table(title="Settings differ: the comparison below measures them as well as the storage",
                  title_justify="left", title_style="bold yellow")
    table.add_column("setting")
    for name in names:
        table.add_column(name)
    for difference in differences:
        table.add_row(Text(difference.setting, style="yellow"), *difference.values)
    return table


def baseline_table(run: RunRecord, baseline: RunRecord) -> RenderableType:
    """Each phase against the baseline run, below the settings in which the two differ."""
    names = [f"baseline {run_name(baseline)}", f"this run {run_name(run)}"]
    settings = settings_table(settings_differences([baseline, run]), names)
    title = f"Against baseline {run_name(baseline)}" + (f" ({baseline.run_id})" if baseline.label else "")
    changes = speed_changes(run, baseline)
    if not changes:
        return Group(settings, Text(f"{title}: no completed phase in common to compare", style="yellow"))
    table = Table(title=title, title_justify="left")
    for heading in ("phase", "baseline", "this run", "this run against the baseline"):
        table.add_column(heading, justify="left" if heading == "phase" else "right")
    for row in changes:
        table.add_row(row.operation, speed_text(row.figure, row.baseline), speed_text(row.figure, row.current),
                      row.wording)
    return Group(settings, table)


def recorded_backup_size(run: RunRecord) -> int | None:
    """--backup-size as given to `run`, or in a recipe's workload."""
    if run.settings.get("backup_size"):
        return run.settings["backup_size"]
    workloads = (run.settings.get("recipe") or {}).get("workload") or []
    return next((w["backup_size"] for w in workloads if w.get("backup_size")), None)


def _layout_lines(run: RunRecord, layout: str | None, size: int | None) -> list[RenderableType]:
    lines: list[RenderableType] = []
    prefix = f"{layout}: " if layout else ""
    restore = restore_range(run, layout)
    if restore:
        # On flash, random reads can beat sequential ones: say which end is which rather than assume.
        lines.append(Text(
            f"{prefix}Restore range: {restore_range_text(restore)} MiB/s "
            f"(unfragmented/sequential {units.format_rate(restore.best_bps)}, "
            f"fully fragmented/random {units.format_rate(restore.worst_bps)}){model_range_text(restore)}"
        ))
    windows = backup_windows(run, size, layout) if size else []
    if windows:
        table = Table(title=f"{prefix}Backup windows for {units.format_size(size)}", title_justify="left")
        table.add_column("job")
        table.add_column("hours", justify="right")
        sampled = any(window.interval_text() for window in windows)
        if sampled:
            table.add_column("95% interval", justify="right")
        for window in windows:
            table.add_row(window.label, f"{window.seconds / 3600:,.1f}", *([window.interval_text() or "-"] if sampled
                                                                            else []))
        lines.append(table)
    penalty = first_write_penalty(run, layout)
    if penalty is not None:
        lines.append(Text(f"{prefix}First-write penalty: overwrite is {penalty:,.2f}x as fast as the first "
                          "write (1.00x = no allocation cost)"))
    return lines


def summary_lines(run: RunRecord, backup_size: int | None = None) -> list[RenderableType]:
    size = backup_size or recorded_backup_size(run)
    lines: list[RenderableType] = []
    for layout in layouts_of(run):
        lines += _layout_lines(run, layout, size)
    files = files_table(run)
    if files is not None:
        lines.append(files)
    lines += aging_tables(run)
    for report in fault_reports(run):
        lines.append(fault_table(report))
        lines += [Text(f"note: {line}", style="yellow") for line in report.model_warnings()]
    for note in run.all_notes:
        lines.append(Text(f"note: {note}", style="yellow"))
    if run.status != COMPLETE:
        lines.append(Text(f"run {run.status}" + (f": {run.error}" if run.error else ""), style="red"))
    return lines


def layouts_table(run: RunRecord) -> RenderableType | None:
    matrix = layout_matrix(run)
    if matrix is None:
        return None
    table = Table(title="Layouts compared (effective MiB/s or files/s; faster/slower: against the first layout)",
                  title_justify="left")
    table.add_column("phase")
    for layout in matrix.layouts:
        table.add_column(layout, justify="right")
    for phase in matrix.phases:
        table.add_row(phase, *matrix.cells(phase))
    for cells in comparison_rows(fault_reports(run), matrix.layouts):
        table.add_row(*cells)
    verdicts = [Text(f"Verdict: {v.text}") for v in map(matrix.verdict, matrix.phases) if v is not None]
    return Group(table, *verdicts)


def run_report(run: RunRecord, backup_size: int | None = None, baseline: RunRecord | None = None) -> RenderableType:
    tables = operations_tables(run)
    # A multi-host run's Hosts table right under the totals it breaks down.
    parts: list[RenderableType] = [*tables, *hosts_renderables(run), *summary_lines(run, backup_size)]
    comparison = layouts_table(run)
    if comparison is not None:
        parts.insert(len(tables), comparison)
    if baseline is not None:
        parts.append(baseline_table(run, baseline))
    return Group(*parts)


def run_size_text(run: RunRecord) -> str:
    """What a run moved or held, from its own settings and figures: an S3 run's bytes PUT (its
    objects x their size before the PUT phase measured them), a small-file run's files x their
    size, a fio run's test file."""
    settings = run.settings
    measured = phase_kinds.of_kind(run, run.kind).default
    if measured == phase_kinds.S3:
        written = [op.figures["bytes"] for op in run.operations
                   if naming.phase_of(op.name) == "put" and "bytes" in op.figures]
        if written:
            return f"{units.format_size(int(max(written)))} PUT"
        size, objects = settings.get("object_size"), settings.get("objects")
        if isinstance(size, int) and objects:
            return f"{objects:,} x {units.format_size(size)}"
        return "-"
    if measured == phase_kinds.FILES and settings.get("files") and settings.get("file_size"):
        return (f"{units.format_size(settings['files'] * settings['file_size'])} "
                f"({settings['files']:,} x {units.format_size(settings['file_size'])})")
    return units.format_size(settings["file_size"]) if settings.get("file_size") else "-"


def history_table(runs: list[RunRecord]) -> Table:
    table = Table(title="Stored runs", title_justify="left")
    for heading in ("run", "started (UTC)"):
        table.add_column(heading, no_wrap=True)
    labelled = any(run.label for run in runs)  # no empty column for stores without labels
    for heading in (["label"] if labelled else []) + ["status", "target", "size"]:
        table.add_column(heading)
    table.add_column("active-full MiB/s", justify="right")
    table.add_column("restore MiB/s", justify="right")
    for run in runs:
        speeds = {op.name: op.figures.get("effective_bw") for op in run.operations if op.status == COMPLETE}
        restore = restore_range(run)
        table.add_row(
            run.run_id, run.started_at.replace("+00:00", "").replace("T", " "),
            *([Text(run.label)] if labelled else []), run.status, run.target,
            run_size_text(run),
            mib(speeds.get("active-full")),
            restore_range_text(restore) if restore else _one_restore(speeds),
        )
    return table


def _one_restore(speeds: dict[str, float | None]) -> str:
    """A run of one restore operation has no range, but still a restore speed: say which."""
    for name, which in (("restore-random", "random"), ("restore-sequential", "sequential")):
        if speeds.get(name):
            return f"{mib(speeds[name])} ({which} only)"
    return "-"
