"""The restore-point arithmetic: how much space a backup policy keeps, per kind and per year.

Sizes are exact integer bytes (fractions, rounded up once per figure):
    protected in year y   P_y = ceil(P x (1 + growth)^y)           year 0 is day one
    full                  F_y = ceil(P_y / reduction)
    incremental           I_y = ceil(P_y x change rate / reduction)
One backup a day; "dailies" counts restore points (Veeam's short-term retention with one run a day).

The most points on disk at once (the peak a repository must hold, just before retention deletes):
- forward-active, forward-synthetic: chains of 7 points (1 full + 6 increments). A chain goes
  only as a whole, once the newer points alone hold the dailies; so the D dailies keep up to 6
  more points of the oldest chain, and today's new point exists before retention runs:
  D + 7 points, of which ceil((D + 7) / 7) are fulls.
- forever-forward: 1 full + D increments (today's increment before it is merged into the full).
- reverse-incremental: 1 full (the newest point) + D rollbacks (today's before the oldest goes).

GFS fulls are fulls of the weekly chains, flagged (Veeam makes no extra file for them); one file
may carry several flags, so only the GFS fulls not already kept by a finer tier are counted:
- weekly: the newest W weekly fulls; the chain's own fulls are among them.
- monthly: a month's first weekly full; consecutive ones are 4 or 5 weeks apart, so the k-th
  newest monthly is certainly among the newest 5(k + 1) weekly fulls: floor(W' / 5) of the
  monthlies are already weeklies (W' = the weekly fulls kept: max(W, chain fulls)).
- yearly: a year's first monthly (12 months apart: floor(M / 12) of them are monthlies) or, with
  no monthlies to cover them, its first weekly (52 or 53 weeks apart: floor(W' / 53)).
Overlaps that depend on the calendar (a monthly that happens to fall within the weeklies) are
not subtracted: the count is the most the policy can keep.

Block clone (XFS reflink, btrfs, ZFS block cloning): a synthetic or GFS full is made by cloning
the blocks it shares with the points before it. Physically the repository then holds the current
data once (one full) plus, for each older point, the blocks overwritten since the next newer
point: changed blocks counted as `days between them x I`, at most one full. That is the sum of
the increments between them (Veeam's own account: GFS fulls on ReFS/XFS are "free", the
increments between them are not), an upper bound: a block changed twice counts twice.
Days between points: 1 in the chain, 7 between weeklies, 35 between monthlies (5 weeks, the
longest gap between first-of-month weekly fulls), 371 between yearlies (53 weeks).
Active fulls are written anew and clone nothing, so forward-active gains nothing from it.

The extra full during a transform: forever-forward merges and reverse-incremental rollbacks
rewrite the full in place, and the full is compacted (rewritten into a new file) now and then
to undo the fragmentation that causes; a backup copy job's merge goes through a temporary file
as large as the full (Veeam KB2207). One full is counted for it; with block clone the merge and
the compact clone blocks, so nothing. forward-synthetic builds each week's full while the chain
still exists: that full is already one of the chain's fulls.

Workspace: a share (default 10%) of the restore points, kept free for temporary files, retried
jobs, one-off fulls and the filesystem's headroom.

Where this differs from Veeam's Restore Point Simulator (RPS, tdewin/rps) and sizing guidance:
- RPS simulates the calendar day by day; this counts the peak in closed form (the same D + 6 kept
  points, and also today's point before retention runs, which RPS's worst case leaves out).
- RPS adds a tiered working space: the full size times 1.05 for the first 10 TiB of source data,
  0.66 for the next 10, 0.4 up to 100 TiB, 0.25 up to 500 TiB, 0.10 beyond. Here the transform's
  extra full is explicit and the workspace a flat share the user sets.
- Veeam's older best-practice guide asks for "the size of a full backup multiplied by 1.25x" for
  chain transformation; here that is the one full above plus the workspace.
- KB2207 counts one full per GFS point; here a full carrying several flags counts once (only
  the overlaps certain whatever the calendar).
- Growth: every point of year y is counted at year y's size (GFS fulls made earlier, when the data
  was smaller, are over-counted: the safe side).

Sources: RPS's engine (github.com/tdewin/rps, pureengine.js) and its author's formula
(blog.dewin.me/2015/08: backup size = C x (F x Data + R x D x Data)); Veeam's best practices,
"Repository storage" (bp.veeam.com/vbr: 2:1 reduction or more, 2-5% daily change, yearly growth and
a forecast period, block clone for synthetic and GFS fulls); KB2207 (one extra full for a merge
through a temporary file, one full per GFS point); Veeam's user guide, "Long-Term Retention Policy
(GFS)" (GFS flags go on fulls; a forever-forward chain has none unless fulls are made by hand);
the Veeam forum's "ReFS/XFS ... spaceless synthetic full backups" (GFS fulls on block clone cost
the increments between them).
"""

from __future__ import annotations

import math
from fractions import Fraction

from pydantic import BaseModel, ConfigDict

from backupbench.sizing.policy import PERIODIC_FULLS, TRANSFORMS, BackupPolicy

CHAIN = 7                 # points per weekly chain: 1 full + 6 increments
WEEK_DAYS = 7
MONTH_DAYS = 35           # the longest gap between two monthly fulls taken from weekly fulls
YEAR_DAYS = 371           # 53 weeks
WEEKLIES_PER_MONTHLY = 5  # the k-th monthly is among the newest 5(k + 1) weekly fulls
WEEKLIES_PER_YEARLY = 53
MONTHLIES_PER_YEARLY = 12


def _exact(value: float) -> Fraction:
    """A decimal as typed (5.5% is 11/2), not its binary float."""
    return Fraction(str(value))


def grown(protected: int, growth_percent: float, years: int) -> int:
    return math.ceil(protected * (1 + _exact(growth_percent) / 100) ** years)


def full_size(protected: int, reduction: float) -> int:
    return math.ceil(protected / _exact(reduction))


def incremental_size(protected: int, change_percent: float, reduction: float) -> int:
    return math.ceil(protected * _exact(change_percent) / 100 / _exact(reduction))


class Counts(BaseModel):
    """Restore points on disk at the peak, by kind (see the module doc)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    points: int           # chain points: the dailies and what retention keeps with them
    chain_fulls: int
    increments: int       # increments or rollbacks
    weekly: int           # GFS fulls not already among the chain's
    monthly: int          # ... nor among the weeklies
    yearly: int           # ... nor among the monthlies (or weeklies)
    transform_fulls: int  # the extra full of a merge / compact


def counts(policy: BackupPolicy) -> Counts:
    days = policy.dailies
    if policy.method in PERIODIC_FULLS:
        points = days + CHAIN
        fulls = math.ceil(points / CHAIN)
    else:
        points, fulls = days + 1, 1
    kept_weekly = max(policy.weeklies, fulls) if policy.method in PERIODIC_FULLS else 0
    covered_yearly = max(policy.monthlies // MONTHLIES_PER_YEARLY, kept_weekly // WEEKLIES_PER_YEARLY)
    transform = 1 if policy.method in TRANSFORMS and not policy.block_clone else 0
    return Counts(points=points, chain_fulls=fulls, increments=points - fulls,
                  weekly=max(0, policy.weeklies - fulls),
                  monthly=policy.monthlies - min(policy.monthlies, kept_weekly // WEEKLIES_PER_MONTHLY),
                  yearly=policy.yearlies - min(policy.yearlies, covered_yearly),
                  transform_fulls=transform)


class PointRow(BaseModel):
    """One kind of restore point: how many, and the bytes each holds in each year."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    kind: str
    count: int
    each_bytes: list[int]   # per year, 0 (day one) .. horizon
    note: str = ""

    def total(self, year: int) -> int:
        return self.count * self.each_bytes[year]


class RetentionTable(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)

    years: list[int]
    protected_bytes: list[int]
    full_bytes: list[int]
    incremental_bytes: list[int]
    counts: Counts
    rows: list[PointRow]
    workspace_bytes: list[int]
    total_bytes: list[int]  # every row and the workspace: what the repository must hold


def _cloned(days: int, full: int, increment: int) -> int:
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
                 each_bytes=[_cloned(WEEK_DAYS, fulls[y], incs[y]) for y in years], note="7 days of changes each"),
        PointRow(kind="monthly GFS fulls (changed blocks)", count=c.monthly,
                 each_bytes=[_cloned(MONTH_DAYS, fulls[y], incs[y]) for y in years],
                 note="35 days of changes each, at most a full"),
        PointRow(kind="yearly GFS fulls (changed blocks)", count=c.yearly,
                 each_bytes=[_cloned(YEAR_DAYS, fulls[y], incs[y]) for y in years],
                 note="371 days of changes each, at most a full"),
    ]


def _rows_whole(policy: BackupPolicy, c: Counts, fulls: list[int], incs: list[int]) -> list[PointRow]:
    increments = "rollbacks" if policy.method == "reverse-incremental" else "increments"
    return [
        PointRow(kind="fulls in the daily chains", count=c.chain_fulls, each_bytes=fulls),
        PointRow(kind=increments, count=c.increments, each_bytes=incs),
        PointRow(kind="weekly GFS fulls", count=c.weekly, each_bytes=fulls, note="beyond the chains' own fulls"),
        PointRow(kind="monthly GFS fulls", count=c.monthly, each_bytes=fulls, note="beyond those that are weeklies"),
        PointRow(kind="yearly GFS fulls", count=c.yearly, each_bytes=fulls, note="beyond those that are monthlies"),
    ]


def retention_table(policy: BackupPolicy) -> RetentionTable:
    """The space `policy` keeps at its peak, per kind of restore point, for each year 0..horizon."""
    years = list(range(policy.horizon + 1))
    protected = [grown(policy.protected, policy.growth, y) for y in years]
    fulls = [full_size(p, policy.reduction) for p in protected]
    incs = [incremental_size(p, policy.change_rate, policy.reduction) for p in protected]
    c = counts(policy)
    clones = policy.block_clone and policy.method == "forward-synthetic"
    rows = _rows_cloned(c, fulls, incs) if clones else _rows_whole(policy, c, fulls, incs)
    if policy.method in TRANSFORMS:
        rows.append(PointRow(kind="extra full during merge/compact", count=c.transform_fulls, each_bytes=fulls,
                             note="block clone: merged and compacted by cloning" if policy.block_clone
                             else "the full is rewritten into a new file (compact; KB2207's temporary file)"))
    rows = [row for row in rows if row.count]
    points = [sum(row.total(y) for row in rows) for y in years]
    workspace = [math.ceil(total * _exact(policy.workspace) / 100) for total in points]
    return RetentionTable(years=years, protected_bytes=protected, full_bytes=fulls, incremental_bytes=incs,
                          counts=c, rows=rows, workspace_bytes=workspace,
                          total_bytes=[p + w for p, w in zip(points, workspace)])
