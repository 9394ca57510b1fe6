"""A phase's latency as the report draws it and `--json` gives it (pure): per kind of request
(fio's reads and writes; an S3 phase's PUT, GET, LIST, DELETE) how many were counted, p50, p90,
p99 and p99.9, a histogram of at most 64 buckets, and its course second by second.

Exact where its sources are. fio's json+ bins of every job, host and sample are added bucket
by bucket and the percentiles read from their sum as fio reads its own (engines/fio_bins.py):
for one host and one sample they are fio's. The S3 loader's latencies are every request's, to
the nanosecond, and their percentiles the nearest rank, as the phase's figures are. Coarsening
to the picture's buckets moves no count: each fio bucket (1/64 of a power of two wide) or
request lands whole in the one bucket its value falls in.

The histogram's buckets are consecutive on a log scale, `per_doubling` to each power of two
(8, else 4, 2 or 1: the finest that keeps the phase's range within 64 buckets): a bucket holds
the latencies above the previous bucket's `upper_ns` and at most its own.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterable, Sequence

from backupbench.engines import fio_bins

# The percentiles given, with the share each reads: exact decimals, so p99.9 of 1,000 values is
# the 999th (the double 99.9 is a hair above it, and would take the 1,000th).
PERCENTILES = (("p50", Fraction(50)), ("p90", Fraction(90)), ("p99", Fraction(99)), ("p99_9", Fraction(999, 10)))
MAX_BUCKETS = 64
STEPS_PER_DOUBLING = (8, 4, 2, 1)


@dataclass(frozen=True)
class Second:
    """One second of a phase (t_s: the end of the window, 1 = the first second measured): how
    many requests ended in it (None where the source does not say), their mean, and their p50
    and p99 where the source keeps each request (fio's log keeps only the mean)."""

    t_s: int
    count: int | None
    mean_ns: float | None
    p50_ns: float | None = None
    p99_ns: float | None = None

    def row(self) -> list[Any]:
        return [self.t_s, self.count, self.mean_ns, self.p50_ns, self.p99_ns]


@dataclass(frozen=True)
class Course:
    """A sample's seconds (a phase measured several times has one course per sample)."""

    sample: int
    seconds: tuple[Second, ...]


@dataclass(frozen=True)
class KindLatency:
    kind: str
    count: int
    percentiles: dict[str, float]
    histogram: tuple[tuple[int, int], ...]
    per_doubling: int
    over_time: tuple[Course, ...] = ()

    def document(self) -> dict[str, Any]:
        return {"kind": self.kind, "count": self.count, **self.percentiles,
                "histogram": [list(bucket) for bucket in self.histogram], "per_doubling": self.per_doubling,
                "over_time": [{"sample": c.sample, "seconds": [s.row() for s in c.seconds]} for c in self.over_time]}


@dataclass(frozen=True)
class PhaseLatency:
    """What a phase's latency picture is of: `source` ("fio" or "s3"), in words (`what`), over
    how many samples and hosts, and what each second of its course is."""

    source: str
    what: str
    over_time_of: str
    kinds: tuple[KindLatency, ...]
    samples: int = 1
    hosts: int = 1

    def document(self) -> dict[str, Any]:
        return {"unit": "ns", "source": self.source, "of": self.what, "samples": self.samples, "hosts": self.hosts,
                "over_time_of": self.over_time_of, "kinds": [kind.document() for kind in self.kinds]}


# ---- the histogram ------------------------------------------------------------------------

def _bucket(value: int, steps: int) -> int:
    """The k of the bucket holding `value`: the least k with value <= 2^(k/steps)."""
    if value <= 1:
        return 0
    k = math.ceil(steps * math.log2(value))
    while 2 ** (k / steps) < value:
        k += 1
    while k > 0 and 2 ** ((k - 1) / steps) >= value:
        k -= 1
    return k


def _steps(low: int, high: int) -> int:
    for steps in STEPS_PER_DOUBLING:
        if _bucket(high, steps) - _bucket(low, steps) < MAX_BUCKETS:
            return steps
    return STEPS_PER_DOUBLING[-1]


def coarse(counts: Iterable[tuple[int, int]]) -> tuple[tuple[tuple[int, int], ...], int]:
    """(value ns, count) pairs as consecutive log-scale buckets [(upper_ns, count)], empty ones
    between included so the picture's gaps are real, and the buckets per doubling used."""
    found = [(int(value), int(count)) for value, count in counts if count > 0]
    if not found:
        return (), STEPS_PER_DOUBLING[0]
    steps = _steps(min(v for v, _ in found), max(v for v, _ in found))
    per_bucket: Counter[int] = Counter()
    for value, count in found:
        per_bucket[_bucket(value, steps)] += count
    buckets: dict[int, int] = {}
    for k in range(min(per_bucket), max(per_bucket) + 1):
        # Integer bounds: two buckets under a nanosecond apart (below ~12 ns) share one.
        upper = math.floor(2 ** (k / steps))
        buckets[upper] = buckets.get(upper, 0) + per_bucket.get(k, 0)
    return tuple(buckets.items()), steps


# ---- from fio's bins ----------------------------------------------------------------------

def from_bins(kind: str, histograms: Sequence[fio_bins.Bins], courses: Sequence[Course] = ()) -> KindLatency:
    """One direction of a fio phase: its json+ bins of every sample (each already the sum of
    its jobs and hosts) added up, its percentiles read from the sum as fio reads them."""
    merged = fio_bins.merge(histograms)
    found = fio_bins.percentiles(merged, [float(share) for _, share in PERCENTILES])
    histogram, steps = coarse(merged.items())
    return KindLatency(kind, sum(merged.values()), {name: float(found[float(share)]) for name, share in PERCENTILES},
                       histogram, steps, tuple(courses))


def fio_seconds(means: Iterable[Any]) -> tuple[Second, ...]:
    """fio's per-second means (engines/fio_logs.SecondMean) as seconds: no percentiles."""
    return tuple(Second(m.t_s, m.ios, m.mean_ns) for m in means)


# ---- from every request's latency ---------------------------------------------------------

def nearest(ordered: Sequence[int], share: Fraction) -> float:
    """The nearest-rank percentile (stats.nearest_rank) with an exact share; 0.0 for none."""
    if not ordered:
        return 0.0
    return float(ordered[max(1, math.ceil(len(ordered) * share / 100)) - 1])


def from_latencies(kind: str, samples: Sequence[Sequence[int]], courses: Sequence[Course] = ()) -> KindLatency:
    """One kind of request: the sorted latencies (ns) of each sample, together."""
    ordered = list(heapq.merge(*samples))
    histogram, steps = coarse(Counter(ordered).items())
    return KindLatency(kind, len(ordered), {name: nearest(ordered, share) for name, share in PERCENTILES},
                       histogram, steps, tuple(courses))


def second_ended(end_ns: int) -> int:
    """The second a request that ended `end_ns` after the phase's start is counted in: 1 for
    the first second, as fio stamps its 1 s windows by their end."""
    return max(0, end_ns) // 1_000_000_000 + 1


def request_seconds(requests: Iterable[tuple[int, int]]) -> tuple[Second, ...]:
    """(end ns since the phase's start, latency ns) of each request as seconds: each request in
    the second it ended in, with the count, mean, p50 and p99 of that second's requests."""
    per_second: dict[int, list[int]] = {}
    for end_ns, latency in requests:
        per_second.setdefault(second_ended(end_ns), []).append(latency)
    return tuple(second_of(t, sorted(values)) for t, values in sorted(per_second.items()))


def second_of(t_s: int, ordered: Sequence[int]) -> Second:
    """A second from its requests' sorted latencies."""
    return Second(t_s, len(ordered), sum(ordered) / len(ordered), nearest(ordered, Fraction(50)),
                  nearest(ordered, Fraction(99)))
