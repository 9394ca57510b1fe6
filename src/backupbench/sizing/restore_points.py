"""The restore-point arithmetic: how much space a backup policy keeps, per kind and per year.

The retention rules (chains, GFS flags, expiry) are retention.py's, which also counts their
peak in closed form (`counts` here) and plays them day by day (`retention.play`: the aging
workload's calendar; a unit test holds the two together); the bytes per kind are
retention_space.py's. This module tabulates them per year of the horizon, with growth and the
workspace, and gives the rules' sources.

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

The peak in bytes is not always the peak in points (issue 40: bench/aging.py measured 7 dailies
+ 4 weeklies without block clone at 1.17x the count above). On a full's day each GFS tier holds
that day's new full beside the N it keeps, until retention drops its oldest: one more full per
tier, with fewer chain points (7 floor((D + 6) / 7) + 1, of which floor((D + 6) / 7) + 1 are
fulls). A full outweighs the increments that day lacks unless increments are large, so with GFS
the plan's peak is usually that day: 30 dailies + 8 weeklies + 12 monthlies + 3 yearlies keep 6
chain fulls + 30 increments + 3 weekly + 11 monthly + 2 yearly GFS fulls on the first full of a
year, where the day with the most points keeps 31 increments and 2 weekly ones. Both days are
counted (retention.peak_days) and the one holding more bytes at the horizon's sizes is the
plan's (retention_space.peak_rows); a unit test holds both against the calendar, played from
several start dates, in files and in bytes.

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
the compact clone blocks, so nothing. Until a compact runs, the full rewritten in place keeps
the gaps its blocks' new versions leave (a new version larger than the old goes elsewhere): a
quarter of the full is counted for them, with block clone or without (retention_space.py;
before issue 40 they were counted free, and forever-forward with block clone measured 1.13x the
plan). forward-synthetic builds each week's full while the chain
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

from pydantic import BaseModel, ConfigDict

from backupbench.retention import Counts
from backupbench.retention import peak_counts as counts  # noqa: F401
from backupbench.retention_space import PointRow, byte_peak, peak_rows
from backupbench.retention_space import exact as _exact
from backupbench.retention_space import full_size, incremental_size  # noqa: F401
from backupbench.sizing.policy import BackupPolicy


def grown(protected: int, growth_percent: float, years: int) -> int:
    return math.ceil(protected * (1 + _exact(growth_percent) / 100) ** years)


class RetentionTable(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)

    years: list[int]
    protected_bytes: list[int]
    full_bytes: list[int]
    incremental_bytes: list[int]
    counts: Counts            # on the day of the peak in bytes (the rows' counts)
    rows: list[PointRow]
    workspace_bytes: list[int]
    total_bytes: list[int]  # every row and the workspace: what the repository must hold


def retention_table(policy: BackupPolicy) -> RetentionTable:
    """The space `policy` keeps at its peak, per kind of restore point, for each year 0..horizon."""
    years = list(range(policy.horizon + 1))
    protected = [grown(policy.protected, policy.growth, y) for y in years]
    fulls = [full_size(p, policy.reduction) for p in protected]
    incs = [incremental_size(p, policy.change_rate, policy.reduction) for p in protected]
    rows = peak_rows(policy, fulls, incs)
    points = [sum(row.total(y) for row in rows) for y in years]
    workspace = [math.ceil(total * _exact(policy.workspace) / 100) for total in points]
    return RetentionTable(years=years, protected_bytes=protected, full_bytes=fulls, incremental_bytes=incs,
                          counts=byte_peak(policy, fulls[-1], incs[-1]), rows=rows, workspace_bytes=workspace,
                          total_bytes=[p + w for p, w in zip(points, workspace)])
