"""What one run says, in one sentence: the headline at the top of its HTML report.

First match wins, since the first is what a reader must not miss:
1. the run did not complete: its figures promise nothing;
2. an expectation (`--expect`) was missed: which one, and by what;
2b. other processes took CPU or moved data while phases ran (monitor/others.py): how many phases,
   the first's reason, and that the figures are not fit for decisions;
2c. a run whose recipe has a [policy]: the repository plan's verdict at the run's speeds (the
   recommended layout and its binding margin, or the nearest miss and what would change it), since
   the decision is what the run was for; the caller words it (report/repository.verdict_headline:
   sizing/ reads analysis/, so the plan cannot be worked out here);
3. an aging run (workloads/aging.py): how the newest full's restore aged from day one to the last
   day measured, with the interval both days' samples allow, or said to be one sample
   (analysis/aging.py); on each layout, when it aged several;
4. several layouts: which one is fastest, named only when analysis/noise.verdict finds the
   difference beyond noise (a phase measured several times is judged on its samples,
   OperationRecord.samples); on one sample no layout is named, not even as leading: the
   sentence says the comparison has one sample, and the fix;
5. otherwise the binding figure: the slowest phase, the one a backup or restore window waits on.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from backupbench.analysis.aging import aged, aging_series
from backupbench.analysis.compare import headline, layout_matrix, speed_text
from backupbench.analysis.noise import Verdict, verdict
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord


@dataclass(frozen=True)
class Headline:
    text: str
    bad: bool = False          # the run failed or missed an expectation


def samples(op: OperationRecord, figure: str) -> list[float]:
    """A phase's samples of `figure`: its repeats (OperationRecord.samples, as the store keeps
    them), else its one value."""
    return [float(v) for v in op.sample_values(figure)] or [float(op.figures[figure])]


@dataclass(frozen=True)
class LayoutCall:
    phase: str
    leader: str
    runner_up: str
    verdict: Verdict


def layout_calls(run: RunRecord) -> list[LayoutCall]:
    """Per phase measured on two layouts or more: the leader against the runner-up, by noise's rule."""
    matrix = layout_matrix(run)
    if matrix is None:
        return []
    calls = []
    for phase in matrix.phases:
        found = [(lay, matrix.values[(phase, lay)]) for lay in matrix.layouts if (phase, lay) in matrix.values]
        figure = Counter(best[0] for _, best in found).most_common(1)[0][0]
        ranked = sorted(((lay, value) for lay, (name, value) in found if name == figure), key=lambda p: -p[1])
        if len(ranked) < 2:
            continue
        (leader, _), (runner_up, _) = ranked[0], ranked[1]
        judged = verdict(samples(matrix.operations[(phase, leader)], figure),
                         samples(matrix.operations[(phase, runner_up)], figure))
        calls.append(LayoutCall(phase, leader, runner_up, judged))
    return calls


def layouts_sentence(calls: Sequence[LayoutCall]) -> str:
    """'lvm-striped is faster beyond noise in 3 of 5 phases', or why no layout can be named."""
    won = Counter(call.leader for call in calls if call.verdict.outcome == "better")
    if won:
        name, count = won.most_common(1)[0]
        best = next(c for c in calls if c.leader == name and c.verdict.outcome == "better")
        return (f"{name} is the fastest layout beyond noise in {count} of {len(calls)} phases compared "
                f"(e.g. {best.phase}: {best.verdict.text} than {best.runner_up})")
    unknown = [call for call in calls if call.verdict.outcome == "unknown"]
    if unknown:
        first = unknown[0]
        more = f" (and {len(unknown) - 1} more phase{'s' * (len(unknown) > 2)} alike)" if len(unknown) > 1 else ""
        return (f"No layout can be named the fastest: the comparison of {first.phase} has one sample "
                f"({first.leader} against {first.runner_up}: {first.verdict.text}){more}")
    return f"No difference beyond noise between the layouts in the {len(calls)} phases compared"


def binding_sentence(run: RunRecord) -> str | None:
    """'The slowest phase is restore-random at 205.0 MiB/s: the figure a backup window waits on'."""
    scored = [(op, best) for op in run.operations if op.status == COMPLETE and (best := headline(op.figures))]
    if not scored:
        return None
    kinds = Counter(best[0] for _, best in scored).most_common(1)[0][0]
    op, (figure, value) = min(((op, best) for op, best in scored if best[0] == kinds), key=lambda p: p[1][1])
    if len(scored) == 1:
        return f"{op.name} ran at {speed_text(figure, value)}"
    return f"The slowest phase is {op.name} at {speed_text(figure, value)}: the figure a backup or restore waits on"


def aging_sentence(run: RunRecord) -> str | None:
    """'After 42 simulated days the newest full restores sequentially at 61% of day one's speed
    (...)', per aging workload of the run; None for a run that aged nothing."""
    found = [(series, how) for series in aging_series(run) if (how := aged(series)) is not None]
    if not found:
        return None
    days = {how.last_day for _, how in found}
    parts = [(f"on {series.label}: " if len(found) > 1 else "") + how.text() for series, how in found]
    return f"After {max(days)} simulated days " + "; ".join(parts)


def run_headline(run: RunRecord, missed: Sequence[str] = (), plan: str | None = None) -> Headline | None:
    """The run's one sentence (module docstring); `missed`: the expectations it missed, as text;
    `plan`: the verdict of the run's repository plan, as text, when its recipe has a [policy]."""
    if run.status != COMPLETE:
        return Headline(f"The run is {run.status}" + (f": {run.error}" if run.error else "")
                        + "; its figures promise nothing", bad=True)
    if missed:
        more = f" (and {len(missed) - 1} more)" if len(missed) > 1 else ""
        return Headline(f"Expectation missed: {missed[0]}{more}", bad=True)
    disturbed = [op for op in run.operations if op.status == COMPLETE and op.disturbed]
    if disturbed:
        first = disturbed[0]
        return Headline(f"{len(disturbed)} of {len(run.operations)} phases ran beside other processes' work "
                        f"({first.name}: {first.disturbed}): these figures are not fit for decisions; measure again "
                        "on a quiet machine", bad=True)
    if plan:
        return Headline(plan)
    aging = aging_sentence(run)
    if aging:
        return Headline(aging)
    calls = layout_calls(run)
    if calls:
        return Headline(layouts_sentence(calls))
    binding = binding_sentence(run)
    return Headline(binding) if binding else None
