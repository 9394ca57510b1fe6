"""Percentiles, one way everywhere (nearest rank); and the spread of a figure measured several times.

Percentiles: the p-th percentile is the smallest value with at least p% of the values at or
below it: always a value that was measured, never one made up between two. The same for
per-file latencies, per-request S3 latencies and the monitor's per-interval p95, so that a p99
in one table means what it means in another.

The spread of repeated samples (`spread`): the figure shown is their median (one disturbed
sample does not move it; for an even count the mean of the middle two, since the nearest rank
of two samples would be the smaller one), with min, max, the coefficient of variation
(sample standard deviation / mean) and a 95% confidence interval. A figure whose CV is over
10% is `unstable` (pbench-fio fails a sample set whose standard deviation is over 10%).

Which interval, and why: Student's t interval of the mean, mean +- t(0.975, n-1) * s / sqrt(n).
Repeats here are few (2 to 10: each is a whole run of minutes), and for so few samples the
alternatives are not honest:
- a bootstrap of the median resamples what was seen: with 2 samples its interval is
  [min, max], which holds the true median only half of the time; for n < 10 it is too narrow;
- a distribution-free interval of the median (order statistics) cannot reach 95% below 6
  samples at all ([min, max] of 5 samples covers 1 - 2 * 0.5^5 = 93.75%).
The t interval is exact for normal samples and widens as it should when samples are few
(t = 12.71 for 2 samples, 4.30 for 3, 2.26 for 10), so two samples honestly say little. It
is deterministic: no resampling, no seed. One sample has no interval and no CV: it is shown as
one sample, never as a figure with a spread of zero.

A figure that cannot be zero or negative (a speed, a latency: every sample > 0) whose t interval
would reach 0 or below (few, scattered samples on a loaded machine: "0.0-1,103.8" said nothing
but that a speed is not negative) gets the same t interval on the log scale instead,
exp(mean(ln x) +- t * s(ln x) / sqrt(n)): always above 0, wider upwards than downwards as the
spread of a ratio-scale figure is, and the interval of its geometric mean rather than its mean,
which `method` says ("t" or "log-t") wherever the interval is shown or stored.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

# A figure whose coefficient of variation is over this is unstable.
UNSTABLE_CV = 0.10
CONFIDENCE = 0.95
# Student's t, two-sided 95% (the 0.975 quantile), by degrees of freedom; tests/unit/test_stats.py
# checks each against the t distribution integrated numerically.
T_975 = {
    1: 12.706204736, 2: 4.302652730, 3: 3.182446305, 4: 2.776445105, 5: 2.570581836,
    6: 2.446911851, 7: 2.364624252, 8: 2.306004135, 9: 2.262157163, 10: 2.228138852,
    11: 2.200985160, 12: 2.178812830, 13: 2.160368656, 14: 2.144786688, 15: 2.131449546,
    16: 2.119905299, 17: 2.109815578, 18: 2.100922040, 19: 2.093024054, 20: 2.085963447,
    21: 2.079613845, 22: 2.073873068, 23: 2.068657610, 24: 2.063898562, 25: 2.059538553,
    26: 2.055529439, 27: 2.051830516, 28: 2.048407142, 29: 2.045229642, 30: 2.042272456,
    40: 2.021075390, 60: 2.000297822, 120: 1.979930405,
}
Z_975 = 1.959963985  # the normal quantile: t's limit for infinitely many degrees of freedom


def nearest_rank(sorted_values: Sequence[float], p: float) -> float:
    """The p-th percentile (0 < p <= 100) of values sorted ascending; 0.0 for none."""
    if not sorted_values:
        return 0.0
    rank = max(1, -(-len(sorted_values) * p // 100))
    return float(sorted_values[int(rank) - 1])


def t_975(degrees_of_freedom: int) -> float:
    """Student's t 0.975 quantile: from the table, between its rows linear in 1/df (the usual
    interpolation, within 0.001 of the exact value)."""
    if degrees_of_freedom < 1:
        raise ValueError("Student's t needs at least one degree of freedom (two samples)")
    if degrees_of_freedom in T_975:
        return T_975[degrees_of_freedom]
    rows = sorted(T_975)
    below = max(df for df in rows if df < degrees_of_freedom)
    above = min((df for df in rows if df > degrees_of_freedom), default=None)
    low_value = T_975[below]
    high_df, high_value = (math.inf, Z_975) if above is None else (above, T_975[above])
    position = (1 / below - 1 / degrees_of_freedom) / (1 / below - 1 / high_df)
    return low_value + (high_value - low_value) * position


@dataclass(frozen=True)
class Spread:
    """A figure measured `n` times: what is shown (the median), how far the samples spread,
    and the 95% interval of their mean. stdev, cv, low and high are None for one sample."""

    samples: tuple[float, ...]
    median: float
    minimum: float
    maximum: float
    mean: float
    stdev: float | None
    cv: float | None
    low: float | None
    high: float | None
    method: str = "t"     # "log-t": on the log scale, always above 0; "min-max" past the floats (module doc)

    @property
    def n(self) -> int:
        return len(self.samples)

    @property
    def one_sample(self) -> bool:
        return self.n == 1

    @property
    def unstable(self) -> bool:
        """CV over 10%: the samples disagree more than a decision should rest on."""
        return self.cv is not None and self.cv > UNSTABLE_CV

    @property
    def half_width(self) -> float | None:
        """Half the interval's width before any clamping at 0: t * s / sqrt(n)."""
        if self.stdev is None:
            return None
        return t_975(self.n - 1) * self.stdev / math.sqrt(self.n)

    def describe(self, shown=lambda value: f"{value:,.4g}") -> str:
        """'312 (median of 3, 95% interval 290-335, CV 3.1%)'; 'one sample' for one;
        ', unstable' is added when the CV is over 10%."""
        if self.one_sample:
            return f"{shown(self.median)} (one sample)"
        assert self.low is not None and self.high is not None and self.cv is not None
        flag = ", unstable" if self.unstable else ""
        scale = {"log-t": " (log scale)", "min-max": " (min-max)"}.get(self.method, "")
        return (f"{shown(self.median)} (median of {self.n}, 95% interval{scale} {shown(self.low)}-{shown(self.high)}, "
                f"CV {self.cv:.1%}{flag})")


def _cv(mean: float, stdev: float) -> float:
    if mean != 0:
        return stdev / abs(mean)
    return 0.0 if stdev == 0 else math.inf


def _log_interval(values: tuple[float, ...], t: float) -> tuple[float, float, str]:
    """The t interval on the log scale (module doc); samples so scattered that it leaves the
    floats (a spread over hundreds of orders of magnitude) give [min, max], said as such."""
    logs = [math.log(value) for value in values]
    centre, half = statistics.fmean(logs), t * statistics.stdev(logs) / math.sqrt(len(values))
    try:
        low, high = math.exp(centre - half), math.exp(centre + half)
    except OverflowError:
        return min(values), max(values), "min-max"
    return (low, high, "log-t") if low > 0 else (min(values), max(values), "min-max")


def spread(samples: Sequence[float]) -> Spread:
    """The spread of one figure's samples; ValueError for none or a value that is not a number."""
    values = tuple(float(value) for value in samples)
    if not values:
        raise ValueError("a figure needs at least one sample")
    if not all(math.isfinite(value) for value in values):
        raise ValueError(f"samples must be finite numbers, not {values}")
    median, mean = statistics.median(values), statistics.fmean(values)
    if len(values) == 1:
        return Spread(values, median, values[0], values[0], mean, None, None, None, None)
    stdev = statistics.stdev(values)
    t = t_975(len(values) - 1)
    half = t * stdev / math.sqrt(len(values))
    low, high, method = mean - half, mean + half, "t"
    if min(values) > 0 and low <= 0:
        low, high, method = _log_interval(values, t)
    elif min(values) >= 0:
        low = max(0.0, low)  # a count that can be 0 (errors, retries): its mean cannot be negative
    return Spread(values, median, min(values), max(values), mean, stdev, _cv(mean, stdev), low, high, method)
