"""The space a retention policy keeps at its peak, in closed form: for each kind of restore
point, how many (retention.peak_counts) and the bytes each holds, given a full's and an
increment's size. sizing/restore_points.py tabulates it for each year of a plan's horizon (with
growth and the workspace) and documents the rules and sources; the aging workload sets the
space it measured against it at its own scale. Pure arithmetic over exact integer bytes: a full is
the protected data over the reduction, an increment the changed share of it over the reduction,
each rounded up once.

Without block clone every point is a file of its own: fulls a full each, increments and
rollbacks an increment each. With block clone (forward-synthetic), the repository holds the
current data once and, for each older point, the blocks overwritten since the next newer one:
a day's increment in the chain, the days between two GFS points of a tier (WEEK_DAYS,
MONTH_DAYS, YEAR_DAYS: retention.py) times an increment, at most a full. A block changed twice
counts twice: an upper bound. forever-forward and reverse-incremental keep one full that is
rewritten in place; without block clone one more full is counted for its merge or compact.

The peak is the day of retention.peak_days that holds the most bytes at the horizon's sizes
(a full's day or the chain's last day: which, depends on a full against an increment).

A full rewritten in place (forever-forward's merges, reverse incremental's new blocks) keeps
gaps: a block's new version goes where the old one was only when it is not larger, else into
the first gap big enough or at the end, and nothing closes the gaps but a compact (Veeam's
"defragment and compact"), which backup software runs now and then if at all. The plan
counts them (FULL_GAPS of the full, with or without block clone: a plan must not promise
space a repository reaches only by compacting); before issue 40 it did not, and
bench/aging.py measured forever-forward with block clone at 1.13x the plan. The share is what
the aging workload's full reached (workloads/aging.py, blocks compressed within 25% of their
mean size: the gaps grew to 23-25% of the full's live data and stayed there); blocks whose
compressed sizes vary more leave more.
"""

from __future__ import annotations

import math
from fractions import Fraction

from pydantic import BaseModel, ConfigDict

from backupbench.retention import (MONTH_DAYS, TRANSFORMS, WEEK_DAYS, YEAR_DAYS, Counts,
                                   RetentionPolicy, peak_counts)

# The gaps a full rewritten in place keeps without a compact, a share of its live data (module doc).
FULL_GAPS = Fraction(1, 4)


def exact(value: float) -> Fraction:
    """A decimal as typed (5.5% is 11/2), not its binary float."""
    return Fraction(str(value))


def full_size(protected: int, reduction: float) -> int:
    return math.ceil(protected / exact(reduction))


def incremental_size(protected: int, change_percent: float, reduction: float) -> int:
    return math.ceil(protected * exact(change_percent) / 100 / exact(reduction))


class PointRow(BaseModel):
    """One kind of restore point: how many, and the bytes each holds in each year."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    kind: str
    count: int
    each_bytes: list[int]   # per year, 0 (day one) .. horizon
    note: str = ""

    def total(self, year: int) -> int:
        return self.count * self.each_bytes[year]


def cloned(days: int, full: int, increment: int) -> int:
    """Blocks a point keeps that no newer point shares: changed in `days`, at most a full."""
    return min(full, days * increment)


def _rows_cloned(c: Counts, fulls: list[int], incs: list[int]) -> list[PointRow]:
    years = range(len(fulls))
    return [
        PointRow(kind="current data (one full)", count=1, each_bytes=fulls,
                 note="block clone: every other point holds only the blocks changed after it"),
        PointRow(kind="daily points (changed blocks)", count=c.points - 1, each_bytes=incs,
                 note=f"{c.chain_fulls} synthetic fulls among them, cloned"),
        PointRow(kind="weekly GFS fulls (changed blocks)", count=c.weekly,
                 each_bytes=[cloned(WEEK_DAYS, fulls[y], incs[y]) for y in years], note="7 days of changes each"),
        PointRow(kind="monthly GFS fulls (changed blocks)", count=c.monthly,
                 each_bytes=[cloned(MONTH_DAYS, fulls[y], incs[y]) for y in years],
                 note="35 days of changes each, at most a full"),
        PointRow(kind="yearly GFS fulls (changed blocks)", count=c.yearly,
                 each_bytes=[cloned(YEAR_DAYS, fulls[y], incs[y]) for y in years],
                 note="371 days of changes each, at most a full"),
    ]


def _rows_whole(policy: RetentionPolicy, c: Counts, fulls: list[int], incs: list[int]) -> list[PointRow]:
    increments = "rollbacks" if policy.method == "reverse-incremental" else "increments"
    return [
        PointRow(kind="fulls in the daily chains", count=c.chain_fulls, each_bytes=fulls),
        PointRow(kind=increments, count=c.increments, each_bytes=incs),
        PointRow(kind="weekly GFS fulls", count=c.weekly, each_bytes=fulls, note="beyond the chains' own fulls"),
        PointRow(kind="monthly GFS fulls", count=c.monthly, each_bytes=fulls, note="beyond those that are weeklies"),
        PointRow(kind="yearly GFS fulls", count=c.yearly, each_bytes=fulls, note="beyond those that are monthlies"),
    ]


def _rows(policy: RetentionPolicy, c: Counts, fulls: list[int], incs: list[int]) -> list[PointRow]:
    clones = policy.block_clone and policy.method == "forward-synthetic"
    rows = _rows_cloned(c, fulls, incs) if clones else _rows_whole(policy, c, fulls, incs)
    if policy.method in TRANSFORMS:
        rows.append(PointRow(kind="gaps in the full rewritten in place", count=1,
                             each_bytes=[math.ceil(full * FULL_GAPS) for full in fulls],
                             note=f"{float(FULL_GAPS):.0%} of the full until a compact closes them"))
        rows.append(PointRow(kind="extra full during merge/compact", count=c.transform_fulls, each_bytes=fulls,
                             note="block clone: merged and compacted by cloning" if policy.block_clone
                             else "the full is rewritten into a new file (compact; KB2207's temporary file)"))
    return [row for row in rows if row.count]


def bytes_on(policy: RetentionPolicy, counts: Counts, full: int, increment: int) -> int:
    """The bytes of the points `counts` holds (a day of the closed form's or of the calendar's)."""
    return sum(row.total(0) for row in _rows(policy, counts, [full], [increment]))


def byte_peak(policy: RetentionPolicy, full: int, increment: int) -> Counts:
    """The points on the day of the peak that holds the most bytes for these sizes."""
    return peak_counts(policy, lambda day: bytes_on(policy, day, full, increment))


def peak_rows(policy: RetentionPolicy, fulls: list[int], incs: list[int]) -> list[PointRow]:
    """The kinds of restore point the policy keeps at its peak (those it keeps any of), each
    with its bytes in every year whose full and increment sizes `fulls` and `incs` give; the
    peak is the day that holds the most at the last year's sizes (the horizon the plan holds)."""
    return _rows(policy, byte_peak(policy, fulls[-1], incs[-1]), fulls, incs)


def peak_bytes(policy: RetentionPolicy, full: int, increment: int) -> int:
    """The restore points' bytes at the peak for one full and increment size (no workspace)."""
    return sum(row.total(0) for row in peak_rows(policy, [full], [increment]))
