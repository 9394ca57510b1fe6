"""A sweep in HTML: the page `backupbench report --sweep ID` writes (and `sweep --html`), and the
section a recipe run with a `sweep` key gets in its own report. Per phase: the grid's table
(report/sweep.py, the same cells as the terminal), its chart inline as SVG (report/sweep_chart.py),
then the best point and where adding parallelism stops paying.
"""

from __future__ import annotations

from backupbench.analysis.compare import target_text
from backupbench.analysis.sweep import SweepData, analyse, from_recipe_run
from backupbench.report import html_page as page
from backupbench.report.charts import inline_svg
from backupbench.report.palette import Colours
from backupbench.report.sweep import grid_tables, grid_title, missing_line
from backupbench.report.sweep_chart import sweep_figure
from backupbench.results.model import RunRecord


def sweep_body(data: SweepData, colours: Colours | None = None) -> str:
    """The tables, charts and verdict lines of one sweep."""
    colours = colours or Colours()
    parts = []
    missing = missing_line(data)
    if missing:
        parts.append(page.callout([missing], "Not measured"))
    for model, sweep in zip(grid_tables(data), analyse(data)):
        rows = [[page.cell(value) for value in row] for row in model.rows]
        parts.append(page.table(model.headings, rows, caption=model.title, numeric_from=len(data.grid)))
        figure = sweep_figure(data, sweep, colours)
        if figure is not None:
            scope = f"sweep-{data.sweep_id}-{sweep.phase}"
            caption = (f"{sweep.phase}: each point the median of its samples, the bar its 95% interval (cut at "
                       f"2.5x the best median); ringed: the best point; x: {data.x_axis}")
            parts.append(page.figure(inline_svg(figure, scope, f"{sweep.phase} against {data.x_axis}"), caption))
        parts.append("<ul>" + "".join(f"<li>{page.e(line)}</li>" for line in model.lines) + "</ul>\n")
    return "".join(parts)


def _runs_table(runs: list[RunRecord]) -> str:
    rows = [[page.e(run.label), f"<code>{page.e(run.run_id)}</code>", page.e(run.status), page.e(run.started_at)]
            for run in runs]
    return page.table(["point", "run", "status", "started"], rows, caption="The sweep's runs (backupbench show RUN)",
                      numeric_from=99)


def render_sweep(data: SweepData, runs: list[RunRecord]) -> str:
    """The whole page of one `backupbench sweep`."""
    first = runs[0]
    target = target_text(first)
    facts = [("sweep", data.sweep_id), ("workload", data.workload), ("target", first.target + (f" ({target})"
                                                                                                 if target else "")),
             ("grid", " x ".join(f"{name} {', '.join(values)}" for name, values in data.grid.items())),
             ("parallelism", ", ".join(data.parallel) or "none swept"),
             ("samples per point", str(data.repeat))]
    header = (f"<h1>Sweep {page.e(data.sweep_id)}</h1>\n<p class=\"subtitle\">{page.e(grid_title(data))}</p>\n"
              + "<dl class=\"facts\">" + "".join(f"<dt>{page.e(k)}</dt><dd>{page.e(v)}</dd>" for k, v in facts)
              + "</dl>\n")
    body = [header, page.section("The grid", sweep_body(data), "grid"), page.section("Runs", _runs_table(runs), "runs")]
    return page.document(f"backupbench {data.sweep_id} — {data.workload}", "".join(body))


def recipe_sweeps_html(run: RunRecord, colours: Colours | None = None) -> str:
    """Every sweep of a recipe run, each under its own heading; '' when it swept nothing."""
    parts = [f"<h3>{page.e(grid_title(data))}</h3>\n{sweep_body(data, colours)}" for data in from_recipe_run(run)]
    return "".join(parts)
