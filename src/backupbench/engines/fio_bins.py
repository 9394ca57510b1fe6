"""fio's latency histograms (`--output-format=json+`: `bins` under clat_ns or lat_ns), merged
across jobs and hosts, and read the way fio reads them.

fio counts every I/O into one of its log-linear latency buckets; json+ lists each bucket that
is not empty as {"<bucket value in ns>": count}. Summing several jobs' or hosts' counts bucket
by bucket gives the histogram fio would have kept had it done all their I/O itself, so its
percentiles carry fio's own precision. The worst host's p99 or an average of per-host p99s
does not: neither is the p99 of the I/O that was done.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from fractions import Fraction
from itertools import accumulate
from typing import Any, Iterable, Mapping

from backupbench.errors import EngineError

Bins = Mapping[int, int]
# The percentiles backupbench reports from a histogram, as fio names them in its JSON.
REPORTED = (50.0, 95.0, 99.0, 99.9)


def parse(raw: Mapping[str, Any], where: str = "bins") -> dict[int, int]:
    """fio's {"value_ns": count} (keys are strings in JSON) as {value_ns: count}."""
    bins: dict[int, int] = {}
    for value, count in raw.items():
        try:
            bucket, number = int(value), int(count)
        except (TypeError, ValueError) as exc:
            raise EngineError(f"fio's {where} has a bucket that is not a number: {value!r}: {count!r}") from exc
        if bucket < 0 or number < 0:
            raise EngineError(f"fio's {where} has a negative bucket or count: {value!r}: {count!r}")
        if number:
            bins[bucket] = number
    return bins


def merge(histograms: Iterable[Bins]) -> dict[int, int]:
    """Counts added bucket by bucket: fio's buckets are the same for every job and host."""
    total: Counter[int] = Counter()
    for bins in histograms:
        total.update(bins)
    return dict(total)


def percentiles(bins: Bins, wanted: Iterable[float] = REPORTED) -> dict[float, int]:
    """Each percentile as fio reports it (stat.c, calc_clat_percentiles): the value of the first
    bucket, in increasing latency, whose running count reaches p/100 of all counts. Empty for an
    empty histogram, as fio then reports none."""
    ordered = sorted(bins.items())
    running = list(accumulate(count for _, count in ordered))
    if not running or running[-1] == 0:
        return {}
    found: dict[float, int] = {}
    for p in wanted:
        if not 0 < p <= 100:
            raise ValueError(f"a percentile is over 0 and at most 100, not {p}")
        # Exactly p/100 of the count, p being the double fio holds. fio's source says
        # `(long double)p / 100.0 * total`, but fio is built with -ffast-math, and Debian's
        # fio 3.33 (x86-64) computes p * (total * 0.01L): for fio's percentiles that agrees with
        # the exact share (every total up to 10^6 checked; tests/unit/test_fio_bins.py checks
        # 50,000) and not with the source's order (30% of 50 samples: fio reports the 15th,
        # the source's order would take the 16th; jsonplus-50-ios.json is that run).
        found[p] = ordered[bisect_left(running, Fraction(p) * running[-1] / 100)][0]
    return found


def percentile(bins: Bins, p: float) -> int | None:
    """One percentile (see `percentiles`), None for an empty histogram."""
    return percentiles(bins, (p,)).get(p)
