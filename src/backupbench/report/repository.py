"""Tables of a repository plan (`backupbench size repository`): the restore points per kind and
year, the candidates against the policy, the day's jobs, and the verdict. Drawing only: the plan
is worked out in sizing/repository_plan.py."""

from __future__ import annotations

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from backupbench.report.sizing import rate_text, size_text
from backupbench.sizing.plan_model import CandidatePlan, Requirement, RepositoryPlan
from backupbench.sizing.policy import METHODS
from backupbench.sizing.restore_points import RetentionTable
from backupbench.sizing.verdict import amount_text, hours_text
from backupbench.sizing.verdict import size_text as short_size

MAX_YEAR_COLUMNS = 6


def _year_label(year: int) -> str:
    return "day one" if year == 0 else f"year {year}"


def shown_years(years: list[int]) -> list[int]:
    """Every year, or day one, the horizon and evenly spaced ones between when there are many."""
    if len(years) <= MAX_YEAR_COLUMNS:
        return years
    step = (len(years) - 1) / (MAX_YEAR_COLUMNS - 1)
    return sorted({years[round(i * step)] for i in range(MAX_YEAR_COLUMNS)})


def retention_columns(plan: RepositoryPlan) -> tuple[str, list[str], list[list[str | Text]], str]:
    """The restore points per kind and year as (title, headings, rows, caption)."""
    policy, table = plan.policy, plan.retention
    title = (f"Restore points at their peak: {policy.retention_text()}, {METHODS[policy.method]}"
             f"{', block clone' if policy.block_clone else ''}; {size_text(policy.protected)} protected, "
             f"{policy.change_rate:g}% changed a day, {policy.reduction:g}:1 reduction, {policy.growth:g}% growth a year")
    years = shown_years(table.years)
    headings = ["kind", "count", "each (day one)", *(_year_label(year) for year in years)]
    rows: list[list[str | Text]] = [[row.kind, str(row.count), short_size(row.each_bytes[0]),
                                     *(short_size(row.total(y)) for y in years)] for row in table.rows]
    rows.append([f"workspace ({policy.workspace:g}%)", "", "", *(short_size(table.workspace_bytes[y]) for y in years)])
    rows.append([Text("total", style="bold"), str(_points(table)), "",
                 *(Text(short_size(table.total_bytes[y]), style="bold") for y in years)])
    caption = (f"full {size_text(table.full_bytes[0])}, increment {size_text(table.incremental_bytes[0])} on day "
               f"one; {size_text(table.full_bytes[-1])} and {size_text(table.incremental_bytes[-1])} in year "
               f"{table.years[-1]}; exact bytes with --json. Data reduction: {plan.reduction_source}.")
    return title, headings, rows, caption


def retention_table(plan: RepositoryPlan) -> Table:
    title, headings, rows, caption = retention_columns(plan)
    out = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    for index, heading in enumerate(headings):
        out.add_column(heading, justify="left" if index == 0 else "right")
    for row in rows:
        out.add_row(*row)
    return out


def _points(table: RetentionTable) -> int:
    return sum(row.count for row in table.rows)


def _requirement_cell(check: Requirement | None) -> Text:
    if check is None:
        return Text("-")
    if check.met:
        return Text(f"ok +{amount_text(check, check.margin)}", style="green")
    return Text(f"MISS -{amount_text(check, -check.margin)}", style="bold red")


def candidate_columns(plan: RepositoryPlan) -> tuple[str, list[str], list[list[str | Text]]]:
    """The candidates against the policy as (title, headings, rows), best first: drawn by the
    terminal (candidates_table) and the HTML page (report/repository_html.py)."""
    horizon = plan.retention.years[-1]
    afr = plan.disks.afr is not None
    title = (f"Candidates against the policy (sizes in year {horizon}, times at the pessimistic speeds; "
             "ok +margin, MISS -shortfall)")
    headings = ["layout", "usable", f"fill day one → year {horizon}", "capacity",
                "longest day", f"window {hours_text(plan.policy.window)}", "restore best .. worst",
                f"RTO {hours_text(plan.policy.rto)}" if plan.policy.rto else "RTO",
                "rebuild", *(["2nd failure meanwhile"] if afr else []), "verdict"]
    rows: list[list[str | Text]] = []
    for candidate in ranked_candidates(plan):
        rebuild = candidate.rebuild
        spare = "spare" if rebuild.label == "distributed spare" else "new disk"
        rows.append([f"{candidate.built}\n{candidate.disks} x {short_size(candidate.disk_bytes)}",
                     short_size(candidate.usable_bytes),
                     f"{candidate.fill_percent[0]:.0f}% → {candidate.fill_percent[-1]:.0f}%",
                     _requirement_cell(candidate.requirement("capacity")), hours_text(candidate.worst_day_seconds),
                     _requirement_cell(candidate.requirement("window")), _restore_text(candidate),
                     _requirement_cell(candidate.requirement("restore")), f"{hours_text(rebuild.seconds)} ({spare})",
                     *([f"{rebuild.another_failure_percent:.2f}%"] if afr and rebuild.another_failure_percent
                       is not None else []),
                     _verdict_cell(candidate)])
    return title, headings, rows


def ranked_candidates(plan: RepositoryPlan) -> list[CandidatePlan]:
    ranking = plan.verdict.ranking
    return sorted(plan.candidates, key=lambda c: ranking.index(c.layout))


def candidates_table(plan: RepositoryPlan) -> Table:
    title, headings, rows = candidate_columns(plan)
    out = Table(title=title, title_justify="left")
    for heading in headings:
        out.add_column(heading, justify="left" if heading in ("layout", "verdict") else "right",
                       no_wrap=heading == "layout")
    for row in rows:
        out.add_row(*row)
    return out


def _restore_text(candidate: CandidatePlan) -> str:
    if candidate.restore is None:
        return "-"
    return f"{hours_text(candidate.restore.best_seconds)} .. {hours_text(candidate.restore.worst_seconds)}"


def _verdict_cell(candidate: CandidatePlan) -> Text:
    if candidate.passed:
        return Text(f"passes ({candidate.binding} binds)", style="green")
    return Text(f"rejected: {', '.join(r.name for r in candidate.requirements if not r.met)}", style="bold red")


def _aged_restore(candidate: CandidatePlan, operation: str) -> str:
    aged = candidate.aged
    assert aged is not None
    speed, first = aged.speeds.get(operation), aged.day_one.get(operation)
    if speed is None:
        return "-"
    interval = f" ({rate_text(speed.low)}-{rate_text(speed.high)})" if speed.samples > 1 else ""
    start = f"{rate_text(first)} → " if first else ""
    return f"{start}{rate_text(speed.value)}{interval}"


def aged_columns(plan: RepositoryPlan) -> tuple[str, list[str], list[list[str | Text]], str] | None:
    """The candidates an aging run measured as (title, headings, rows, caption): its restores on
    day one and at the age planned for (which the plan takes), and its space against the closed
    form there; None when no candidate has an aging run."""
    aged = [candidate for candidate in ranked_candidates(plan) if candidate.aged is not None]
    if not aged:
        return None
    title = "As the repository ages: the restores the plan takes from aging runs, and their space against the plan"
    headings = ["layout", "day", "restore sequential (newest full)", "restore random (the slower)",
                "space / plan that day", "most by then"]
    rows: list[list[str | Text]] = []
    which = []
    for candidate in aged:
        found = candidate.aged
        assert found is not None
        most = found.most_space_vs_plan
        which.append(f"{candidate.layout}: {found.which}")
        rows.append([candidate.layout, f"{found.day} of {found.last_day}", _aged_restore(candidate, "restore-sequential"),
                     _aged_restore(candidate, "restore-random"),
                     "-" if found.space_vs_plan is None else f"{found.space_vs_plan:.3f}x",
                     "-" if most is None else Text(f"{most:.3f}x", style="bold red" if most > 1 else "green")])
    caption = ("; ".join(which) + ". Restores: day one → the day taken (in brackets the 95% interval of a day "
               "measured several times). Space: the day's peak over the plan's closed form for the same policy at "
               "the run's scale (the capacity above is the closed form's; over 1, it may be short).")
    return title, headings, rows, caption


def aged_table(plan: RepositoryPlan) -> Table | None:
    found = aged_columns(plan)
    if found is None:
        return None
    title, headings, rows, caption = found
    out = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    for heading in headings:
        out.add_column(heading, justify="left" if heading == "layout" else "right")
    for row in rows:
        out.add_row(*row)
    return out


def jobs_table(plan: RepositoryPlan) -> Table:
    out = Table(title=f"The jobs in year {plan.retention.years[-1]}, at each layout's speeds", title_justify="left")
    for heading in ("layout", "job", "moves", "like", "speed", "from", "hours"):
        out.add_column(heading, justify="right" if heading in ("moves", "speed", "hours") else "left")
    for candidate in plan.candidates:
        for operation in candidate.operations:
            speed = candidate.speeds.get(operation.speed_of)
            out.add_row(candidate.layout, operation.operation, short_size(operation.bytes),
                        operation.speed_of or "block clone", rate_text(speed.value) if speed else "-",
                        speed.label if speed else "-", hours_text(operation.seconds) if speed else "metadata only")
    return out


def verdict_headline(plan: RepositoryPlan) -> str:
    """The plan's decision in one sentence, for the top of a run's report: the recommended layout
    and its binding requirement's margin, or the nearest miss and what would change it (the
    verdict's full sentence, with every requirement, opens the plan's own section)."""
    verdict = plan.verdict
    best = ranked_candidates(plan)[0]
    binding = best.requirement(best.binding)
    assert binding is not None
    built = f"{best.built} of {best.disks} x {short_size(best.disk_bytes)}"
    if verdict.recommended is not None:
        return (f"Plan at this run's speeds: {built} meets the policy; binding: {binding.name}, "
                f"{amount_text(binding, binding.margin)} ({binding.relative_margin:.0%}) to spare")
    sentence = verdict.sentence.rstrip(".")
    change = next((c for c in verdict.changes if c.layout == best.layout), verdict.changes[0] if verdict.changes
                  else None)
    if change is None:
        return f"{sentence}; no change tried makes a candidate pass"
    whose = "" if change.layout == best.layout else f"{change.layout}: "
    return f"{sentence}; what would change it: {whose}{change.text}"


def verdict_lines(plan: RepositoryPlan) -> list[RenderableType]:
    verdict = plan.verdict
    style = "bold green" if verdict.recommended else "bold red"
    lines: list[RenderableType] = [Text(verdict.sentence, style=style)]
    if verdict.changes:
        lines.append(Text("What would change it:"))
        lines += [Text(f"  {change.layout}: {change.text} (binding then: {change.binding}, "
                       f"{change.relative_margin:.0%} margin)") for change in verdict.changes]
    lines += [Text(f"uncertain: {line}", style="yellow") for line in verdict.uncertain]
    lines += [Text(f"note: {note}", style="yellow") for note in plan.notes]
    lines += [Text(f"note: {c.layout}: {note}", style="yellow") for c in plan.candidates for note in c.notes]
    return lines


def repository_report(plan: RepositoryPlan) -> list[RenderableType]:
    """Everything `size repository` prints, in order."""
    aged = aged_table(plan)
    return [retention_table(plan), candidates_table(plan), *([aged] if aged is not None else []), jobs_table(plan),
            *verdict_lines(plan)]
