"""The repository plan's restore speeds at the age it plans for, from an aging run
(workloads/aging.py; analysis/aging.py reads its days back), instead of a new repository's.

    --from-run RUN [--at-age 180d]

An aging run measures the restores of the newest full and of the oldest point kept on each
measured day. The plan takes the first measured day at or after the age asked for (the later
day: a repository only fragments further), or the run's last day without --at-age:
- restore-sequential, the range's best end: the newest full read in order on that day (last
  night's backup as it lies, its fragmentation included);
- restore-random, the worst end: the slower of that day's random restores (the newest full's
  and the oldest point's).
A day's samples (--repeat) give the median and the 95% interval of the mean, as several runs
do (sizing/measured_speeds.py); one sample is one sample. An age past the run's last measured
day is refused: what the repository does after it was not measured, and aging is not a line to
extend. Beside the speeds, the space the run measured that day over the plan's closed form at
the run's scale (`space_vs_plan`), and the most it reached up to that day: the capacity the plan
holds against is the closed form's; this says how the real filesystem stood against it.
"""

from __future__ import annotations

import math

from backupbench.analysis.aging import RANDOM, ROLES, SEQUENTIAL, AgedDay, AgingSeries
from backupbench.errors import InputError
from backupbench.results.model import OperationRecord
from backupbench.sizing.plan_model import AgedSpeeds, Speed
from backupbench.stats import spread
from backupbench.workloads.aging_run import NEWEST

DAY_SECONDS = 86_400


def age_days(seconds: float | None) -> int | None:
    """--at-age in whole days (a part of a day counts as the day it reaches)."""
    return None if seconds is None else math.ceil(seconds / DAY_SECONDS - 1e-9)


def _speed(op: OperationRecord, why: str) -> Speed:
    values = op.sample_values("effective_bw")
    if len(values) == 1:
        return Speed.single(values[0], "measured", why, samples=1)
    figure = spread(values)
    low = figure.low if figure.low is not None else figure.minimum
    high = figure.high if figure.high is not None else figure.maximum
    return Speed(value=figure.median, low=min(low, figure.median), high=max(high, figure.median), source="measured",
                 samples=len(values), why=f"{why}: median of {len(values)} samples, 95% interval of the mean")


def _day(series: AgingSeries, run_id: str, asked: int | None) -> AgedDay:
    last = series.days[-1].day
    if asked is None:
        return series.days[-1]
    found = next((day for day in series.days if day.day >= asked), None)
    if found is None:
        raise InputError(f"--at-age {asked}d: aging run {run_id} measured days 0 to {last}; what its repository does "
                         "after that was not measured", f"give --at-age {last}d or less, or age a run for {asked} "
                         f"days or more (--days {asked})")
    return found


def aged_speeds(series: AgingSeries, run_id: str, asked: int | None) -> AgedSpeeds | None:
    """The restores of `series` at `asked` days (None: its last day); None when it restored
    nothing on that day (a run of other operations)."""
    day = _day(series, run_id, asked)
    where = f"aging run {run_id}, day {day.day}"
    speeds: dict[str, Speed] = {}
    newest = day.restore(SEQUENTIAL, NEWEST)
    if newest is not None and newest.figures.get("effective_bw"):
        speeds[SEQUENTIAL] = _speed(newest, f"{where}: the newest full read in order")
    randoms = [(role, op) for role in ROLES if (op := day.restore(RANDOM, role)) is not None
               and op.figures.get("effective_bw")]
    if randoms:
        role, slowest = min(randoms, key=lambda found: found[1].figures["effective_bw"])
        speeds[RANDOM] = _speed(slowest, f"{where}: the {role} {'full' if role == NEWEST else 'point'}'s random "
                                         "restore, the slower of the day's")
    if not speeds:
        return None
    first = series.days[0]
    day_one = {name: op.figures["effective_bw"] for name in (SEQUENTIAL, RANDOM)
               if (op := first.restore(name)) is not None and op.figures.get("effective_bw")}
    ratios = [ratio for aged in series.days if aged.day <= day.day
              and (ratio := aged.job_figure("space_vs_plan")) is not None]
    return AgedSpeeds(run_id=run_id, day=day.day, last_day=series.days[-1].day, asked_days=asked, speeds=speeds,
                      day_one=day_one, space_vs_plan=day.job_figure("space_vs_plan"),
                      most_space_vs_plan=max(ratios) if ratios else None)
