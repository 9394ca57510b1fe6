"""A sweep's grid as tables (analysis/sweep.py says what they hold): one row per point, its
speed (the median, bold on the best point), the 95% interval and CV of its samples, its p99
latency and the run it is stored as; below each table the best point and, along each
parallelism axis, where adding more stops paying. The rows are data here (`grid_rows`), drawn
by the terminal (`sweep_renderables`, rich) and by the HTML page (report/sweep_html.py), so
both show the same cells.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from backupbench.analysis.sweep import Cell, PhaseSweep, SweepData, analyse
from backupbench.report.tables import Styled
from backupbench.stats import Spread


@dataclass(frozen=True)
class GridTable:
    title: str
    headings: list[str]
    rows: list[list[str]]           # cells: str or Styled (bold: the best point; yellow: unstable)
    lines: list[str]                # the best point, then one line per parallelism axis and line


def grid_title(data: SweepData) -> str:
    """'sweep-1a2b3c4d: kb2014 over iodepth 1, 4, 16 x jobs 1, 2 (6 points, 3 samples each)'."""
    over = " x ".join(f"{name} {', '.join(values)}" for name, values in data.grid.items())
    samples = f", {data.repeat} samples each" if data.repeat > 1 else ", one sample each"
    count = len(data.points)
    return f"{data.sweep_id}: {data.workload} over {over} ({count} point{'s' if count != 1 else ''}{samples})"


def _interval(figure: Spread | None, shown) -> str:
    if figure is None or figure.one_sample or figure.low is None or figure.high is None or figure.cv is None:
        return "one sample" if figure is not None else "-"
    scale = {"log-t": " log", "min-max": " min-max"}.get(figure.method, "")
    text = f"{figure.n}: {shown(figure.low)}-{shown(figure.high)}{scale}, CV {figure.cv:.1%}"
    return Styled(text, "yellow") if figure.unstable else text


def _number(sweep: PhaseSweep, value: float) -> str:
    return sweep.speed_text(value).removesuffix(f" {sweep.unit}")


def _row(sweep: PhaseSweep, cell: Cell, grid: list[str], source: str) -> list[str]:
    values = cell.point.as_dict()
    if cell.speed is None:
        return [*(values[name] for name in grid), Styled(cell.status or "not run", "yellow"), "", "", source]
    speed = _number(sweep, cell.speed.median)
    shown = Styled(speed, "bold") if cell is sweep.best else speed
    p99 = f"{cell.p99[1] / 1e6:,.2f} ms" if cell.p99 else "-"
    return [*(values[name] for name in grid), shown, _interval(cell.speed, lambda v: _number(sweep, v)), p99, source]


def grid_tables(data: SweepData) -> list[GridTable]:
    """One table per phase the sweep measured."""
    sources = {point.point: point.source for point in data.points}
    grid = list(data.grid)
    tables = []
    for sweep in analyse(data):
        headings = [*grid, sweep.unit or sweep.figure, "interval, CV", "p99 latency", "stored as"]
        rows = [_row(sweep, cell, grid, sources.get(cell.point, "")) for cell in sweep.cells]
        lines = [sweep.best_text, *(axis.text for axis in sweep.axes)]
        tables.append(GridTable(f"{sweep.phase}: {sweep.unit or sweep.figure} against {' and '.join(grid)}",
                                headings, rows, lines))
    return tables


def missing_line(data: SweepData) -> str:
    """The points the sweep did not measure (it stopped, or a point failed), or ''."""
    missing = data.missing
    if not missing:
        return ""
    return (f"{len(missing)} of {len(data.points)} points not measured: " + ", ".join(p.text for p in missing[:6])
            + (" ..." if len(missing) > 6 else ""))


def _rich(cell: str) -> str | Text:
    return Text(cell, style=cell.style) if isinstance(cell, Styled) else Text(cell)


def sweep_renderables(data: SweepData) -> list[RenderableType]:
    """The sweep as the terminal shows it: its title, a table per phase with its lines."""
    out: list[RenderableType] = [Text(grid_title(data), style="bold")]
    missing = missing_line(data)
    if missing:
        out.append(Text(missing, style="yellow"))
    for model in grid_tables(data):
        table = Table(title=model.title, title_justify="left")
        for index, heading in enumerate(model.headings):
            table.add_column(heading, justify="left" if index < len(data.grid) or index == len(model.headings) - 1
                             else "right")
        for row in model.rows:
            table.add_row(*map(_rich, row))
        out.append(table)
        out.extend(Text(line) for line in model.lines)
    return out


def sweep_view(data: SweepData) -> Group:
    return Group(*sweep_renderables(data))
