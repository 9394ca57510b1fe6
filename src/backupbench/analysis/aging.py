"""An aging run read back by simulated day (workloads/aging.py): for each workload of the run
that aged a repository, its measured days, each with the day's job and its restores of the
newest full and the oldest point. Pure: a stored run in, its days out. The reports draw them
(report/aging.py), the headline says how the newest full's restore aged (analysis/headline.py),
and the repository plan takes its restore speeds at the age it plans for (sizing/aged_speeds.py).

How a restore aged is the ratio of the last measured day's speed to day 0's, both of the newest
full: with samples on both days (--repeat), the range analysis/noise.ratio_interval allows (both
95% intervals: the verdict's rule read as a range); with one sample, no interval, and said so.
"""

from __future__ import annotations

from dataclasses import dataclass

from backupbench import units
from backupbench.analysis.noise import REPEAT_FIX, ratio_interval
from backupbench.disk_model import MODEL_RANDOM, MODEL_SEQUENTIAL
from backupbench.recipe import naming
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
from backupbench.workloads.aging_run import JOB, NEWEST, OLDEST, parse_phase

SEQUENTIAL, RANDOM = "restore-sequential", "restore-random"
RESTORES = (SEQUENTIAL, RANDOM)
ROLES = (NEWEST, OLDEST)
MODEL = {SEQUENTIAL: MODEL_SEQUENTIAL, RANDOM: MODEL_RANDOM}
HOW = {SEQUENTIAL: "sequentially", RANDOM: "at random"}


@dataclass(frozen=True)
class AgedDay:
    """One measured day: its job, and its restores by (operation, role)."""

    day: int
    job: OperationRecord | None
    restores: dict[tuple[str, str], OperationRecord]

    def restore(self, operation: str, role: str = NEWEST) -> OperationRecord | None:
        return self.restores.get((operation, role))

    def job_figure(self, name: str) -> float | None:
        return self.job.figures.get(name) if self.job is not None else None


@dataclass(frozen=True)
class AgingSeries:
    """One aging workload's measured days, in order. `group`: where its phases are stored ('' for
    a run's only workload, else its layout and workload: recipe/naming.py)."""

    group: str
    layout: str
    days: tuple[AgedDay, ...]

    @property
    def label(self) -> str:
        return self.group or "the run"

    def day(self, number: int) -> AgedDay | None:
        return next((day for day in self.days if day.day == number), None)

    @property
    def full_bytes(self) -> float | None:
        """The first full as stored: what day 0's active full wrote."""
        first = self.day(0)
        return first.job_figure("write_bytes") if first is not None else None

    def job_hours_per_tib(self, day: AgedDay) -> float | None:
        """The day's job time scaled linearly to a full of 1 TiB: at this run's scale a job takes
        seconds; a plan's full is terabytes (the speed, not the time, is what carries over)."""
        seconds, full = day.job_figure("job_s"), self.full_bytes
        return None if seconds is None or not full else seconds * units.TiB / full / 3600


def _healthy(op: OperationRecord) -> bool:
    return op.status == COMPLETE and op.state in ("", naming.HEALTHY)


def aging_series(run: RunRecord) -> list[AgingSeries]:
    """Every aging workload of `run` with its measured days ([] for a run that aged nothing)."""
    found: dict[str, dict[int, tuple[list[OperationRecord], dict[tuple[str, str], OperationRecord]]]] = {}
    layouts: dict[str, str] = {}
    for op in run.operations:
        parsed = parse_phase(naming.phase_of(op.name))
        if parsed is None or not _healthy(op) or "simulated_day" not in op.figures:
            continue
        day, what, role = parsed
        group = naming.group_of(op.name)
        layouts[group] = op.layout
        jobs, restores = found.setdefault(group, {}).setdefault(day, ([], {}))
        if what == JOB:
            jobs.append(op)
        else:
            restores[(what, role)] = op
    return [AgingSeries(group, layouts[group], tuple(AgedDay(number, jobs[0] if jobs else None, restores)
                                                      for number, (jobs, restores) in sorted(days.items())))
            for group, days in found.items()]


@dataclass(frozen=True)
class Aged:
    """How one restore of the newest full aged from the first measured day to the last."""

    operation: str
    first: OperationRecord
    last: OperationRecord
    first_day: int
    last_day: int

    @property
    def ratio(self) -> float:
        return self.last.figures["effective_bw"] / self.first.figures["effective_bw"]

    @property
    def interval(self) -> tuple[float, float] | None:
        """The ratios both days' 95% intervals allow; None unless both were sampled."""
        return ratio_interval(self.last.sample_values("effective_bw"), self.first.sample_values("effective_bw"))

    @property
    def model_ratio(self) -> float | None:
        name = MODEL[self.operation]
        first, last = self.first.figures.get(name), self.last.figures.get(name)
        return last / first if first and last else None

    def text(self) -> str:
        """'the newest full restores sequentially at 61% of day one's speed (95% interval 55-68%,
        3 samples each); on the model's spinning disk at 21%'."""
        counts = {op.sample_count for op in (self.first, self.last)}
        found = self.interval
        noise = (f"95% interval {found[0]:.0%}-{found[1]:.0%}, {'/'.join(map(str, sorted(counts)))} samples each"
                 if found is not None else
                 f"one sample {'each' if counts == {1} else 'on one day'}: noise unknown, {REPEAT_FIX}")
        speeds = f"{units.format_rate(self.last.figures['effective_bw'])} against " \
                 f"{units.format_rate(self.first.figures['effective_bw'])}"
        model = f"; on the model's spinning disk at {self.model_ratio:.0%}" if self.model_ratio else ""
        start = "day one's" if self.first_day == 0 else f"day {self.first_day}'s"
        return (f"the newest full restores {HOW[self.operation]} at {self.ratio:.0%} of {start} speed ({speeds}; "
                f"{noise}){model}")


def aged(series: AgingSeries, operations: tuple[str, ...] = RESTORES) -> Aged | None:
    """The first of `operations` measured on the first and the last day, how it aged; None for
    a run of one measured day or without restores."""
    if len(series.days) < 2:
        return None
    first, last = series.days[0], series.days[-1]
    for operation in operations:
        before, after = first.restore(operation), last.restore(operation)
        if before is not None and after is not None and before.figures.get("effective_bw") and \
                after.figures.get("effective_bw"):
            return Aged(operation, before, after, first.day, last.day)
    return None
