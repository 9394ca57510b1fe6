"""Runs and layouts set against each other: how much faster or slower, which one wins and why.

Every comparison says its direction in words, from `relative_speed` alone (analysis/noise.py's
verdict): "2.00x faster" / "2.00x slower" only when the two figures' 95% intervals part,
otherwise "no difference beyond noise (±y%)"; a figure measured once says so and suggests
--repeat 3. So no table prints a bare factor that reads either way, or one noise could make.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from backupbench import units
from backupbench.analysis import noise
from backupbench.errors import InputError
from backupbench.recipe import naming
from backupbench.results.model import COMPLETE, SPEED_FIGURES, OperationRecord, RunRecord

# The figure that says how fast a phase went (results/model.py owns the order).
HEADLINE_FIGURES = SPEED_FIGURES
# Two cells of a several-runs table closer than this are both marked best (a tie is no win);
# whether two speeds differ is noise.verdict's to say.
SAME_WITHIN = 0.02
# A phase's p99 latency figures (ns) and what to call each; lower is better.
P99_FIGURES = (
    ("read_p99_lat", "read p99"),
    ("write_p99_lat", "write p99"),
    ("file_p99_lat", "per-file p99"),
    ("lat_p99_ns", "request p99"),
)


def _samples(value: float | Sequence[float]) -> list[float]:
    return [float(value)] if isinstance(value, (int, float)) else [float(v) for v in value]


def speed_verdict(current: float | Sequence[float], reference: float | Sequence[float]) -> noise.Verdict:
    """`current` against `reference` (a figure, or its samples), higher being better."""
    mine, theirs = _samples(current), _samples(reference)
    if not mine or not theirs:
        return noise.Verdict("unknown", None, None, "no speed to compare")
    found = noise.verdict(mine, theirs)
    return noise.Verdict("unknown", None, None, "no speed to compare") if found.factor is None else found


def relative_speed(current: float | Sequence[float], reference: float | Sequence[float]) -> str:
    """'2.00x faster', '2.00x slower', 'no difference beyond noise (±8.1%)', or on one sample
    '2.00x faster on one sample (...): noise unknown, measure with --repeat 3'. The one wording
    every comparison uses; pass the samples (OperationRecord.sample_values) where there are some."""
    return speed_verdict(current, reference).text


def run_name(run: RunRecord) -> str:
    """What a run is called wherever runs are compared: its --label, else its id."""
    return run.label or run.run_id


def run_heading(run: RunRecord) -> str:
    """How a run's own tables and pages are titled: its id, and its --label when it has one."""
    return f"Run {run.run_id}" + (f" ({run.label})" if run.label else "")


def target_text(run: RunRecord, devices: bool = True) -> str:
    """What lies under the run's target: 'xfs on dm-0'. A recipe's layouts that stood on
    different filesystems or devices are each named, so no layout's rows are captioned with
    another's: 'xfs on dm-0 (linear) / dm-2 (striped) / ext4 on loop1 (scratch)' (slashes: the
    captions around it are lists with commas). devices=False: the filesystems alone ('xfs').
    '' when no target has a filesystem."""
    under: dict[str, tuple[str, str]] = {}
    for name, target in (run.host.get("targets") or {}).items():
        if isinstance(target, dict) and target.get("fs_type"):
            device = str(target.get("block_device") or target.get("source") or "?") if devices else ""
            under[str(name)] = (str(target["fs_type"]), device)
    if len(set(under.values())) <= 1:
        return " on ".join(part for part in next(iter(under.values()), ()) if part)
    parts, previous_fs = [], None
    for name, (fs_type, device) in under.items():
        where = device if devices and fs_type == previous_fs else " on ".join(p for p in (fs_type, device) if p)
        parts.append(f"{where} ({name})")
        previous_fs = fs_type
    return " / ".join(parts)


def target_line(run: RunRecord, devices: bool = True) -> str:
    """The run's target and what lies under it: '/mnt/repo (xfs on dm-0)'."""
    under = target_text(run, devices)
    return run.target + (f" ({under})" if under else "")


def run_names(runs: Sequence[RunRecord]) -> list[str]:
    """Each run's name, with the id added where two runs share a label, so columns stay apart."""
    names = [run_name(run) for run in runs]
    shared = {name for name, count in Counter(names).items() if count > 1}
    return [f"{name} ({run.run_id})" if name in shared and name != run.run_id else name
            for name, run in zip(names, runs)]


def headline(figures: dict[str, float]) -> tuple[str, float] | None:
    for name in HEADLINE_FIGURES:
        value = figures.get(name)
        if value:
            return name, value
    return None


def phase_p99(figures: dict[str, float]) -> tuple[str, float] | None:
    """The phase's p99 latency (figure name, ns): the read or write one, whichever it has; for a
    phase that both reads and writes, the worse of the two, since either can hold a job up."""
    found = [(name, figures[name]) for name, _ in P99_FIGURES if figures.get(name)]
    return max(found, key=lambda pair: pair[1]) if found else None


def p99_label(figure: str) -> str:
    return dict(P99_FIGURES).get(figure, figure)


def speed_text(figure: str, value: float) -> str:
    return f"{value / units.MiB:,.1f} MiB/s" if figure == "effective_bw" else f"{value:,.0f} files/s"


@dataclass(frozen=True)
class SpeedChange:
    operation: str
    figure: str
    baseline: float   # the median, for a phase measured several times
    current: float
    baseline_samples: tuple[float, ...] = ()
    current_samples: tuple[float, ...] = ()

    @property
    def factor(self) -> float:
        """This run's speed / the baseline's: 2.0 means this run went twice as fast."""
        return self.current / self.baseline

    @property
    def wording(self) -> str:
        return relative_speed(self.current_samples or self.current, self.baseline_samples or self.baseline)


def _complete_ops(run: RunRecord) -> dict[str, OperationRecord]:
    return {op.name: op for op in run.operations if op.status == COMPLETE}


def speed_changes(run: RunRecord, baseline: RunRecord) -> list[SpeedChange]:
    base = _complete_ops(baseline)
    result = []
    for name, op in _complete_ops(run).items():
        mine, theirs = headline(op.figures), headline(base[name].figures) if name in base else None
        if mine and theirs and mine[0] == theirs[0]:
            result.append(SpeedChange(name, mine[0], theirs[1], mine[1], tuple(base[name].sample_values(theirs[0])),
                                      tuple(op.sample_values(mine[0]))))
    return result


def require_common_phase(phases: Iterable[str], name: str, baseline: RunRecord) -> None:
    """A baseline shares at least one phase with the run (`phases`: the run's, or the ones it
    will measure), or the comparison would be an empty table."""
    mine = list(dict.fromkeys(phases))
    theirs = list(_complete_ops(baseline))
    if set(mine) & set(theirs):
        return
    raise InputError(f"{name} and baseline {run_name(baseline)} have no phase in common "
                     f"({name}: {', '.join(mine) or 'none'}; {run_name(baseline)}: {', '.join(theirs) or 'none'})",
                     "compare with a run of the same workload and operations (backupbench history lists them)")


def first_write_penalty(run: RunRecord, layout: str | None = None) -> float | None:
    """How many times faster the overwrite went than the first write (1.0 = no allocation cost)."""
    speeds = {naming.phase_of(op.name): op.figures.get("effective_bw") or 0.0 for op in run.operations
              if op.status == COMPLETE and (op.layout or None) == layout}
    first, again = speeds.get("first-write", 0.0), speeds.get("overwrite", 0.0)
    if first <= 0 or again <= 0:
        return None
    return again / first


@dataclass(frozen=True)
class LayoutMatrix:
    """Phases x layouts of one recipe run: which layout should I build?"""

    layouts: tuple[str, ...]
    phases: tuple[str, ...]
    values: dict[tuple[str, str], tuple[str, float]]  # (phase, layout) -> (figure, value)
    operations: dict[tuple[str, str], OperationRecord]

    def ratio(self, phase: str, layout: str) -> float | None:
        """This layout against the first one that has the phase."""
        reference = self.reference_layout(phase)
        mine, base = self.values.get((phase, layout)), self.values.get((phase, reference or ""))
        if mine is None or base is None or base[0] != mine[0] or not base[1]:
            return None
        return mine[1] / base[1]

    def reference_layout(self, phase: str) -> str | None:
        """The layout a phase's others are set against: the first that has it."""
        return next((lay for lay in self.layouts if (phase, lay) in self.values), None)

    def verdict(self, phase: str) -> Verdict | None:
        return phase_verdict(phase, [(lay, self.operations[(phase, lay)]) for lay in self.layouts
                                     if (phase, lay) in self.operations])

    def cells(self, phase: str) -> list[str]:
        """One phase across the layouts: '201.0 (4.00x faster)' against the first layout; the
        terminal and the HTML report show the same cells."""
        cells = []
        reference = self.reference_layout(phase)
        base = self.values.get((phase, reference or ""))
        for layout in self.layouts:
            found = self.values.get((phase, layout))
            if found is None:
                cells.append("-")
                continue
            figure, value = found
            shown = f"{value / units.MiB:,.1f}" if figure == "effective_bw" else f"{value:,.0f}"
            against = base is not None and base[0] == figure and layout != reference
            samples = (self.operations[(phase, layout)].sample_values(figure),
                       self.operations[(phase, reference)].sample_values(figure)) if against and reference else None
            cells.append(shown + (f" ({relative_speed(*samples)})" if samples else ""))
        return cells


def layout_matrix(run: RunRecord) -> LayoutMatrix | None:
    layouts: list[str] = []
    phases: list[str] = []
    values: dict[tuple[str, str], tuple[str, float]] = {}
    operations: dict[tuple[str, str], OperationRecord] = {}
    for op in run.operations:
        group = op.layout
        best = headline(op.figures)
        if not group or op.status != COMPLETE or best is None:
            continue
        phase = op.name.removeprefix(f"{group}/")
        layouts += [group] if group not in layouts else []
        phases += [phase] if phase not in phases else []
        values[(phase, group)] = best
        operations[(phase, group)] = op
    if len(layouts) < 2:
        return None
    return LayoutMatrix(tuple(layouts), tuple(phases), values, operations)


# ---------------------------------------------------------------------------------------------
# Verdicts: the winner, the margin, the evidence, in one sentence


def _evidence(winner: OperationRecord, other: OperationRecord) -> str:
    """Why, from what the monitor and the engine recorded: how busy the member disks were,
    else the p99 latency."""
    mine, theirs = winner.figures.get("members_util"), other.figures.get("members_util")
    if mine is not None and theirs is not None:
        return f"; its member disks were {mine:,.0f}% busy against {theirs:,.0f}%"
    mine_p99, theirs_p99 = phase_p99(winner.figures), phase_p99(other.figures)
    if mine_p99 and theirs_p99:
        return (f"; its {p99_label(mine_p99[0])} latency was {mine_p99[1] / 1e6:,.2f} ms "
                f"against {theirs_p99[1] / 1e6:,.2f} ms")
    return ""


@dataclass(frozen=True)
class Verdict:
    phase: str
    winner: str | None  # None: no clear winner (within noise, or noise unknown: one sample)
    text: str


def phase_verdict(phase: str, entries: Sequence[tuple[str, OperationRecord]]) -> Verdict | None:
    """'B wins restore-random: 412.0 MiB/s vs 205.0 MiB/s for A (2.01x faster); its member disks
    were 38% busy against 97%' from (name, operation) pairs; None with fewer than two to compare.
    Measured once on either side: 'no winner in restore-random on one sample: B ... (2.01x faster
    on one sample (...): noise unknown, measure with --repeat 3)'."""
    scored = [(name, op, headline(op.figures)) for name, op in entries if op.status == COMPLETE]
    kinds = Counter(best[0] for _, _, best in scored if best)
    if not kinds:
        return None
    figure = kinds.most_common(1)[0][0]
    ranked = sorted(((name, op, best[1]) for name, op, best in scored if best and best[0] == figure),
                    key=lambda entry: -entry[2])
    if len(ranked) < 2:
        return None
    (first, first_op, best_value), (second, second_op, next_value) = ranked[0], ranked[1]
    against = f"{speed_text(figure, best_value)} vs {speed_text(figure, next_value)} for {second}"
    if len(ranked) > 2:
        against += ", the next best"
    found = speed_verdict(first_op.sample_values(figure), second_op.sample_values(figure))
    if found.outcome == "same" or best_value == next_value:
        return Verdict(phase, None, f"no clear winner in {phase}: {first} {against} ({found.text})")
    if found.outcome == "unknown":
        # One sample names no winner, not even a leader, and the evidence would read as why it won.
        return Verdict(phase, None, f"no winner in {phase} on one sample: {first} {against} ({found.text})")
    return Verdict(phase, first, f"{first} wins {phase}: {against} ({found.text}){_evidence(first_op, second_op)}")


def overall_verdict(verdicts: Sequence[Verdict]) -> str | None:
    """'Overall: lvm-striped is the fastest in 4 of 5 phases compared' from the phases' verdicts."""
    winners = [verdict.winner for verdict in verdicts if verdict.winner]
    if not winners or len(verdicts) < 2:
        return None
    name, count = Counter(winners).most_common(1)[0]
    return f"Overall: {name} is the fastest in {count} of {len(verdicts)} phases compared"
