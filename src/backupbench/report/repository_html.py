"""The repository plan on the HTML page of a run whose recipe has a [policy]: the restore
points, the candidates against the policy, the verdict, and a fill-over-time chart per
candidate. The tables' cells are report/repository.py's, the terminal's; a shortfall is marked
as the other pages mark a bad figure."""

from __future__ import annotations

import re

from rich.text import Text

from backupbench.report import charts
from backupbench.report import html_page as page
from backupbench.report.html_page import e
from backupbench.report.plan_chart import fill_figure
from backupbench.report.repository import aged_columns, candidate_columns, ranked_candidates, retention_columns
from backupbench.sizing.plan_model import RepositoryPlan


# A plan's cell wraps at its spaces (a dozen columns of "MISS -395 TB" and "rejected: capacity,
# window" would not fit a page unbroken), but a number never parts from its unit.
NUMBER_UNIT = re.compile(r"(?<=\d) (?=[A-Za-z%])")


def _cell(value: str | Text) -> str:
    text = value.plain if isinstance(value, Text) else value
    escaped = NUMBER_UNIT.sub("&nbsp;", e(text)).replace("\n", "<br>")
    if text.startswith(("MISS", "rejected")):
        return f'<span class="status wraps">{escaped}</span>'
    if isinstance(value, Text) and "bold" in str(value.style):
        return f'<strong class="wraps">{escaped}</strong>'
    return f'<span class="wraps">{escaped}</span>'


def _table(headings: list[str], rows: list[list[str | Text]], caption: str) -> str:
    return page.table(headings, [[_cell(c) for c in row] for row in rows], caption=caption)


# The rebuild column's "(new disk)" / "(spare)": a keyed note, so the column is as wide as a time.
REBUILD_ONTO = re.compile(r"(.+) \((new disk|spare)\)")
ONTO = {"new disk": "rebuilt onto one new disk (a replacement written whole)",
        "spare": "rebuilt onto the dRAID's distributed spare (every disk writes its share)"}


def _candidates_table(plan: RepositoryPlan) -> str:
    title, headings, rows = candidate_columns(plan)
    notes = page.Notes()
    rebuild = headings.index("rebuild")
    cells = []
    for row in rows:
        shown = [_cell(value) for value in row]
        found = REBUILD_ONTO.fullmatch(str(row[rebuild]))
        if found is not None:
            shown[rebuild] = notes.mark(_cell(found.group(1)), ONTO[found.group(2)])
        cells.append(shown)
    return page.table(headings, cells, caption=title, notes=notes)


def plan_html(plan: RepositoryPlan) -> str:
    """The decision first: the verdict, the candidates against the policy and what would change
    it; then what the candidates were sized for (the restore points) and the rest."""
    verdict = plan.verdict
    parts = [f'<p class="headline"><strong>{e(verdict.sentence)}</strong></p>\n']
    parts.append(_candidates_table(plan))
    if verdict.changes:
        parts.append(page.callout([f"{c.layout}: {c.text} (binding then: {c.binding}, {c.relative_margin:.0%} margin)"
                                   for c in verdict.changes], "What would change it"))
    title, headings, rows, caption = retention_columns(plan)
    parts.append(_table(headings, rows, title) + f'<p class="table-note">{e(caption)}</p>\n')
    aged = aged_columns(plan)
    if aged is not None:
        parts.append(_table(aged[1], aged[2], aged[0]) + f'<p class="table-note">{e(aged[3])}</p>\n')
    cautions = [*verdict.uncertain, *plan.notes, *(f"{c.layout}: {note}" for c in plan.candidates for note in c.notes)]
    if cautions:
        parts.append(page.callout(cautions, "Uncertain inputs and notes"))
    years = plan.retention.years
    for candidate in ranked_candidates(plan):
        svg = charts.inline_svg(fill_figure(candidate, years), f"fill-{candidate.layout}",
                                f"Fill over time of {candidate.built}")
        parts.append(page.figure(svg, f"{candidate.layout}: fill at day one and each year of the horizon."))
    return "".join(parts)
