"""The repository plan on the HTML page of a run whose recipe has a [policy]: the restore
points, the candidates against the policy, the verdict, and a fill-over-time chart per
candidate. The tables' cells are report/repository.py's, the terminal's; a shortfall is marked
as the other pages mark a bad figure."""

from __future__ import annotations

from rich.text import Text

from backupbench.report import charts
from backupbench.report import html_page as page
from backupbench.report.html_page import e
from backupbench.report.plan_chart import fill_figure
from backupbench.report.repository import candidate_columns, ranked_candidates, retention_columns
from backupbench.sizing.plan_model import RepositoryPlan


def _cell(value: str | Text) -> str:
    text = value.plain if isinstance(value, Text) else value
    escaped = e(text).replace("\n", "<br>")
    if text.startswith(("MISS", "rejected")):
        return f'<span class="status">{escaped}</span>'
    return f"<strong>{escaped}</strong>" if isinstance(value, Text) and "bold" in str(value.style) else escaped


def _table(headings: list[str], rows: list[list[str | Text]], caption: str) -> str:
    return page.table([e(h) for h in headings], [[_cell(c) for c in row] for row in rows], caption=caption)


def plan_html(plan: RepositoryPlan) -> str:
    verdict = plan.verdict
    title, headings, rows, caption = retention_columns(plan)
    parts = [f'<p class="headline"><strong>{e(verdict.sentence)}</strong></p>\n',
             _table(headings, rows, f"{title}. {caption}")]
    title, headings, rows = candidate_columns(plan)
    parts.append(_table(headings, rows, title))
    if verdict.changes:
        parts.append(page.callout([f"{c.layout}: {c.text} (binding then: {c.binding}, {c.relative_margin:.0%} margin)"
                                   for c in verdict.changes], "What would change it"))
    cautions = [*verdict.uncertain, *plan.notes, *(f"{c.layout}: {note}" for c in plan.candidates for note in c.notes)]
    if cautions:
        parts.append(page.callout(cautions, "Uncertain inputs and notes"))
    years = plan.retention.years
    for candidate in ranked_candidates(plan):
        svg = charts.inline_svg(fill_figure(candidate, years), f"fill-{candidate.layout}",
                                f"Fill over time of {candidate.built}")
        parts.append(page.figure(svg, f"{candidate.layout}: fill at day one and each year of the horizon."))
    return "".join(parts)
