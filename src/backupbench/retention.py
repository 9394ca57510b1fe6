"""The retention rules of a backup policy, one owner: what each day's backup job makes, which
full carries which GFS flag, and when each restore point is deleted. The repository plan
counts the peak these rules reach in closed form (`peak_counts`, and retention_space.py's
bytes, which sizing/restore_points.py tabulates per year); the aging workload
(workloads/aging.py) plays them day by day on a real filesystem (`play`). A unit test holds the
calendar's peak against the closed form for many policies.

One backup a day; day 0 is the first full, written anew (an active full). By method:
- forward-active, forward-synthetic: a full every CHAIN-th day (0, 7, 14, ...) and an increment
  on the days between: chains of 7 points, 1 full + 6 increments. forward-active writes each
  full anew; forward-synthetic writes the day's increment, builds the full from the points
  before it (by block clone, or by copy), then removes that increment: the full is the day's
  point. A chain is deleted as a whole, once the points after it alone hold the dailies.
- forever-forward: the full, then an increment a day; once the points are more than the
  dailies, the oldest increment is merged into the full (which then holds that day) and removed.
- reverse-incremental: the full is always the newest point. Each day the old versions of the
  blocks that changed are copied out of it into a rollback (the day before's point), then the
  new ones are written into it; once the points are more than the dailies, the oldest
  rollback is deleted.

GFS (only where fulls are periodic: `gfs_contradiction`): flags go on fulls as they are made:
weekly on every full, monthly on a calendar month's first full, yearly on a calendar year's
first (day 0 is START, Monday 1 January 2024: the first full opens a week, a month and a year).
A tier keeps its newest N flagged fulls, today's among them; a full is deleted once no tier
keeps it and its chain is gone. Veeam flags fulls the same way and makes no file for a flag.

Retention runs after the day's job: the points on disk after the job and before retention
(today's point, and what retention is about to delete) are the day's peak, which the
repository must hold. forever-forward's merge is part of retention: its peak holds today's
increment before the oldest is merged.

What the closed form takes from the calendar: a month's first full follows the month before's
by 4 or 5 weeks (MONTH_DAYS, the longer: the most a monthly's changes can span), a year's by 52
or 53 (YEAR_DAYS); so the k-th newest monthly is certainly among the newest 5(k + 1) weekly
fulls (WEEKLIES_PER_MONTHLY), a yearly among the newest 53 weeklies or 12 monthlies. Which
monthlies fall among the weeklies on a given day depends on the calendar; the closed form
subtracts only the certain ones, so it is the most any calendar keeps, and `play` (one
calendar) keeps at most that.

The peak falls on one of two days, and which one holds more bytes depends on a full's size
against an increment's (`peak_counts` weighs both; retention_space.py with the bytes):
- the day the most chain points are on disk (the oldest chain's last day: D + 7 points);
- a full's day, when each GFS tier holds today's new full beside the N it keeps until
  retention drops its oldest (N + 1 fulls a tier: the week's, and on a month's or a year's
  first full the month's and the year's), with fewer chain points: 7 floor((D + 6) / 7) + 1.
  Without block clone that is the byte peak whenever a full outweighs the increments it
  lacks: 7 dailies + 4 weeklies keep 4 fulls + 12 increments on the first day and 5 fulls + 6
  increments on the second (the closed form before issue 40's measurements counted only the
  first: 1.17x under what bench/aging.py measured). On a full's day today's monthly and
  yearly full are today's weekly too: the k-th newest monthly is then among the newest 5k + 1
  weekly fulls, the k-th yearly among the newest 53k + 1.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field

from backupbench.schema import Count, Flag

Method = Literal["forward-active", "forward-synthetic", "forever-forward", "reverse-incremental"]
METHODS: dict[str, str] = {
    "forward-active": "forward incremental with a weekly active full",
    "forward-synthetic": "forward incremental with a weekly synthetic full",
    "forever-forward": "forever forward incremental (the oldest increment merged into the full)",
    "reverse-incremental": "reverse incremental (the full is the newest point, rollbacks behind it)",
}
# Methods that make a full every week, which GFS can flag.
PERIODIC_FULLS = ("forward-active", "forward-synthetic")
# Methods whose daily job rewrites the full in place (merge, rollback): the transform methods.
TRANSFORMS = ("forever-forward", "reverse-incremental")

CHAIN = 7                 # points per weekly chain: 1 full + 6 increments
WEEK_DAYS = 7
MONTH_DAYS = 35           # the longest gap between two monthly fulls taken from weekly fulls
YEAR_DAYS = 371           # 53 weeks
WEEKLIES_PER_MONTHLY = 5  # the k-th monthly is among the newest 5(k + 1) weekly fulls
WEEKLIES_PER_YEARLY = 53
MONTHLIES_PER_YEARLY = 12
START = datetime.date(2024, 1, 1)

FULL, INCREMENT, ROLLBACK = "full", "increment", "rollback"
WEEKLY, MONTHLY, YEARLY = "weekly", "monthly", "yearly"
TIERS = (WEEKLY, MONTHLY, YEARLY)   # finest first: a full kept by several counts as the finest's
# What a day's job does (KB2014's operation names where there is one).
ACTIVE_FULL, INCREMENTAL, SYNTHETIC_FULL = "active-full", "increment", "synthetic-full"
MERGE, REVERSE_INCREMENTAL = "increment+merge", "reverse-incremental"


class RetentionPolicy(BaseModel):
    """How a backup job makes its restore points and how long it keeps them."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    method: Method = Field(
        "forward-synthetic", description="Backup method: " + "; ".join(f"{k}: {v}" for k, v in METHODS.items())
        + ".", json_schema_extra={"metavar": "METHOD"})
    block_clone: Flag = Field(
        False, description="The repository clones blocks (XFS reflink, btrfs, ZFS block cloning): synthetic "
        "fulls, GFS fulls and merges share unchanged blocks and cost only changed ones.")
    dailies: Count = Field(7, ge=1, le=10_000, description="Daily restore points kept (one backup a day).",
                           json_schema_extra={"metavar": "N"})
    weeklies: Count = Field(0, ge=0, le=5_200, description="Weekly GFS fulls kept.",
                            json_schema_extra={"metavar": "N"})
    monthlies: Count = Field(0, ge=0, le=1_200, description="Monthly GFS fulls kept.",
                             json_schema_extra={"metavar": "N"})
    yearlies: Count = Field(0, ge=0, le=100, description="Yearly GFS fulls kept.", json_schema_extra={"metavar": "N"})

    @property
    def has_gfs(self) -> bool:
        return bool(self.weeklies or self.monthlies or self.yearlies)

    def kept(self, tier: str) -> int:
        return {WEEKLY: self.weeklies, MONTHLY: self.monthlies, YEARLY: self.yearlies}[tier]

    def retention_text(self) -> str:
        """'30 dailies + 8 weeklies + 12 monthlies + 3 yearlies'."""
        parts = [(self.dailies, "daily", "dailies"), (self.weeklies, "weekly", "weeklies"),
                 (self.monthlies, "monthly", "monthlies"), (self.yearlies, "yearly", "yearlies")]
        return " + ".join(f"{n} {one if n == 1 else many}" for n, one, many in parts if n)


def flag(name: str, value: object = None) -> str:
    """How a flag is written: '--weeklies 8' (or '--weeklies' without a value)."""
    text = "--" + name.replace("_", "-")
    return text if value is None else f"{text} {value}"


def key(name: str, value: object = None) -> str:
    """How a recipe key is written: 'weeklies = 8' (or 'weeklies')."""
    return name if value is None else f"{name} = {value}"


def gfs_contradiction(policy: RetentionPolicy, spelled: Callable[..., str] = flag) -> tuple[str, str] | None:
    """(problem, fix) when GFS counts go with a method that makes no periodic full: Veeam's user
    guide: GFS applies to a forever-forward chain only if fulls are made by hand or a script."""
    if not policy.has_gfs or policy.method in PERIODIC_FULLS:
        return None
    given = ", ".join(spelled(name, getattr(policy, name)) for name in ("weeklies", "monthlies", "yearlies")
                      if getattr(policy, name))
    return (f"{given} with {spelled('method', policy.method)}: GFS keeps periodic fulls, and {policy.method} "
            f"never makes one", f"use {spelled('method', 'forward-synthetic')} or forward-active, or drop the "
            "GFS counts")


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

    @property
    def files(self) -> int:
        """Restore points on disk: the chains' and the GFS fulls beyond them."""
        return self.points + self.weekly + self.monthly + self.yearly


def _on_a_day(policy: RetentionPolicy, points: int, fulls: int, fulls_day: bool) -> Counts:
    """The points on disk on a day with `points` chain points of which `fulls` are fulls, and
    the GFS fulls beyond them: on a full's day (`fulls_day`) each tier holds one more, today's,
    which is also the newest weekly and chain full (see the module doc)."""
    extra = 1 if fulls_day else 0
    weeklies = policy.weeklies + extra if policy.weeklies else 0
    kept_weekly = max(weeklies, fulls)   # the newest fulls on disk: the chains' and the weeklies
    # Today's monthly or yearly is the newest weekly: the overlaps certain on a full's day count
    # from it (5k + 1, 53k + 1), else from the newest weekly before it (5(k + 1), 53(k + 1)).
    within = kept_weekly - extra
    monthly = policy.monthlies - min(policy.monthlies, within // WEEKLIES_PER_MONTHLY)
    covered = max(policy.monthlies // MONTHLIES_PER_YEARLY, within // WEEKLIES_PER_YEARLY)
    return Counts(points=points, chain_fulls=fulls, increments=points - fulls, weekly=max(0, weeklies - fulls),
                  monthly=monthly, yearly=policy.yearlies - min(policy.yearlies, covered),
                  transform_fulls=1 if policy.method in TRANSFORMS and not policy.block_clone else 0)


def peak_days(policy: RetentionPolicy) -> tuple[Counts, ...]:
    """The closed form: the points of each kind on disk on each day a peak can fall on, the
    most any calendar keeps there (see the module doc)."""
    days = policy.dailies
    if policy.method not in PERIODIC_FULLS:
        return (_on_a_day(policy, days + 1, 1, False),)
    chains = (days + CHAIN - 1) // CHAIN + 1   # on a full's day, today's chain among them
    fulls_day = _on_a_day(policy, CHAIN * (chains - 1) + 1, chains, True)
    if days % CHAIN == 1:
        return (fulls_day,)   # the oldest chain's last day is a full's day: one day, both peaks
    points = days + CHAIN
    return (_on_a_day(policy, points, math.ceil(points / CHAIN), False), fulls_day)


def files(counts: Counts) -> tuple[int, int]:
    """The default weight of a day: its files, then its chain points."""
    return (counts.files, counts.points)


def peak_counts(policy: RetentionPolicy, weigh: Callable[[Counts], Any] = files) -> Counts:
    """The closed form at the peak: the day of `peak_days` that weighs the most (its files by
    default; retention_space.py weighs bytes)."""
    return max(peak_days(policy), key=weigh)


# ---- the calendar ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Point:
    """A restore point: a file of the repository, named by its kind and the day it was made;
    `day` is the day it restores to (a transform's full moves on every day)."""

    kind: str
    made: int
    day: int
    flags: tuple[str, ...] = ()

    @property
    def ident(self) -> tuple[str, int]:
        return (self.kind, self.made)


@dataclass(frozen=True)
class Day:
    """One simulated day: the job, the point it made, and what retention did after it."""

    day: int
    job: str
    made: Point
    on_disk: tuple[Point, ...]    # after the job, before retention: the day's peak, oldest first
    expired: tuple[Point, ...]    # deleted by retention today
    kept: tuple[Point, ...]       # on disk at the end of the day, oldest first
    counts: Counts                # on_disk by kind, as the closed form counts them
    merged: Point | None = None   # forever-forward: the increment merged into the full today
    start: datetime.date = START  # day 0's date

    @property
    def date(self) -> datetime.date:
        return self.start + datetime.timedelta(days=self.day)

    def newest_full(self) -> Point:
        return max((p for p in self.kept if p.kind == FULL), key=lambda p: p.day)

    def oldest(self) -> Point:
        return min(self.kept, key=lambda p: p.day)


def gfs_flags(policy: RetentionPolicy, day: int, start: datetime.date = START) -> tuple[str, ...]:
    """The flags a full made on `day` carries: weekly on every one, monthly on a month's first,
    yearly on a year's first (only the tiers the policy keeps)."""
    date = start + datetime.timedelta(days=day)
    firsts = {WEEKLY: True, MONTHLY: date.day <= WEEK_DAYS, YEARLY: date.month == 1 and date.day <= WEEK_DAYS}
    return tuple(tier for tier in TIERS if firsts[tier] and policy.kept(tier))


@dataclass
class _Forward:
    """The forward methods' state: the live chains, and the fulls only GFS keeps."""

    policy: RetentionPolicy
    chains: list[list[Point]] = field(default_factory=list)
    gfs: dict[tuple[str, int], str] = field(default_factory=dict)   # full -> the tier keeping it
    gfs_points: list[Point] = field(default_factory=list)
    start: datetime.date = START

    def job(self, day: int) -> tuple[str, Point]:
        if day % CHAIN:
            point = Point(INCREMENT, day, day)
            self.chains[-1].append(point)
            return INCREMENTAL, point
        point = Point(FULL, day, day, gfs_flags(self.policy, day, self.start))
        self.chains.append([point])
        job = SYNTHETIC_FULL if day and self.policy.method == "forward-synthetic" else ACTIVE_FULL
        return job, point

    def on_disk(self) -> list[Point]:
        return self.gfs_points + [p for chain in self.chains for p in chain]

    def counts(self) -> Counts:
        points = sum(len(chain) for chain in self.chains)
        tiers = [self.gfs[p.ident] for p in self.gfs_points]
        return Counts(points=points, chain_fulls=len(self.chains), increments=points - len(self.chains),
                      weekly=tiers.count(WEEKLY), monthly=tiers.count(MONTHLY), yearly=tiers.count(YEARLY),
                      transform_fulls=0)

    def retain(self) -> list[Point]:
        expired: list[Point] = []
        while len(self.chains) > 1 and sum(len(chain) for chain in self.chains[1:]) >= self.policy.dailies:
            gone = self.chains.pop(0)
            expired += gone[1:]
            self.gfs_points.append(gone[0])
        fulls = self.gfs_points + [chain[0] for chain in self.chains]
        keeping: dict[tuple[str, int], str] = {}
        for tier in reversed(TIERS):   # the finest tier last: it names the full
            flagged = sorted((p for p in fulls if tier in p.flags), key=lambda p: p.made)
            for point in flagged[max(0, len(flagged) - self.policy.kept(tier)):]:
                keeping[point.ident] = tier
        expired += [p for p in self.gfs_points if p.ident not in keeping]
        self.gfs_points = [p for p in self.gfs_points if p.ident in keeping]
        self.gfs = {p.ident: keeping[p.ident] for p in self.gfs_points}
        return expired


@dataclass
class _Transform:
    """forever-forward and reverse-incremental: one full, and the increments or rollbacks."""

    policy: RetentionPolicy
    full: Point | None = None
    others: list[Point] = field(default_factory=list)
    merged: Point | None = None

    def job(self, day: int) -> tuple[str, Point]:
        self.merged = None
        if self.full is None:
            self.full = Point(FULL, day, day)
            return ACTIVE_FULL, self.full
        if self.policy.method == "forever-forward":
            point = Point(INCREMENT, day, day)
            self.others.append(point)
            return INCREMENTAL, point
        point = Point(ROLLBACK, day, day - 1)
        self.others.append(point)
        self.full = replace(self.full, day=day)
        return REVERSE_INCREMENTAL, point

    def on_disk(self) -> list[Point]:
        assert self.full is not None
        points = [self.full, *self.others]
        return sorted(points, key=lambda p: p.day)

    def counts(self) -> Counts:
        return Counts(points=1 + len(self.others), chain_fulls=1, increments=len(self.others), weekly=0,
                      monthly=0, yearly=0, transform_fulls=0)

    def retain(self) -> list[Point]:
        if 1 + len(self.others) <= self.policy.dailies:
            return []
        oldest = self.others.pop(0)
        if self.policy.method == "forever-forward":
            assert self.full is not None
            self.merged, self.full = oldest, replace(self.full, day=oldest.day)
            return []
        return [oldest]


def play(policy: RetentionPolicy, days: int, start: datetime.date = START) -> list[Day]:
    """Days 0..days of the policy, each with its job, its peak and what retention deleted; day 0
    on `start` (the closed form's test plays other calendars: which fulls are a month's first
    depends on it)."""
    state: _Forward | _Transform = (_Forward(policy, start=start) if policy.method in PERIODIC_FULLS
                                    else _Transform(policy))
    played = []
    for day in range(days + 1):
        job, made = state.job(day)
        on_disk, counts = tuple(sorted(state.on_disk(), key=lambda p: p.day)), state.counts()
        expired = tuple(state.retain())
        merged = state.merged if isinstance(state, _Transform) else None
        if merged is not None:
            job = MERGE
        kept = tuple(sorted(state.on_disk(), key=lambda p: p.day))
        played.append(Day(day, job, made, on_disk, expired, kept, counts, merged, start))
    return played
