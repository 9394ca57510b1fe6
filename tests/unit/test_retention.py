"""The retention rules, one owner (retention.py): the calendar day by day (which day makes what,
GFS flags, when each point goes), and the repository plan's closed form held against it."""

from __future__ import annotations

import datetime
import math

import pytest

from backupbench import retention
from backupbench.errors import InputError
from backupbench.retention import (ACTIVE_FULL, FULL, INCREMENT, INCREMENTAL, MERGE, MONTHLY, REVERSE_INCREMENTAL,
                                   ROLLBACK, SYNTHETIC_FULL, WEEKLY, YEARLY, RetentionPolicy, peak_counts, play)
from backupbench.retention_space import bytes_on, peak_bytes
from backupbench.sizing.policy import BackupPolicy, check_policy
from backupbench.sizing.restore_points import counts, retention_table


def names(points) -> list[str]:
    return [f"{p.kind[0]}{p.made}" for p in points]


def test_forward_synthetic_makes_a_full_every_seventh_day_and_deletes_a_chain_whole():
    days = play(RetentionPolicy(method="forward-synthetic", dailies=7), 21)
    assert [d.job for d in days[:8]] == [ACTIVE_FULL] + [INCREMENTAL] * 6 + [SYNTHETIC_FULL]
    assert days[7].made == retention.Point(FULL, 7, 7) and days[14].job == SYNTHETIC_FULL
    # The first chain (days 0-6) goes on day 13: days 7-13 alone then hold the 7 dailies.
    assert all(not d.expired for d in days[:13])
    assert names(days[13].expired) == ["i1", "i2", "i3", "i4", "i5", "i6", "f0"]
    assert names(days[13].on_disk) == ["f0", *(f"i{d}" for d in range(1, 7)), "f7",
                                       *(f"i{d}" for d in range(8, 14))]  # the peak: 14 = 7 + 7 points
    assert names(days[13].kept) == ["f7", *(f"i{d}" for d in range(8, 14))]
    assert days[13].counts == peak_counts(RetentionPolicy(dailies=7))


def test_forward_active_writes_its_fulls_anew():
    days = play(RetentionPolicy(method="forward-active", dailies=3), 14)
    assert [d.job for d in days] == ([ACTIVE_FULL] + [INCREMENTAL] * 6) * 2 + [ACTIVE_FULL]
    # dailies 3: the first chain goes on day 9 (days 7, 8, 9 hold them).
    assert next(d.day for d in days if d.expired) == 9


def test_gfs_flags_go_on_a_weeks_months_and_years_first_full():
    policy = RetentionPolicy(dailies=7, weeklies=4, monthlies=3, yearlies=2)
    days = play(policy, 400)
    assert retention.START == datetime.date(2024, 1, 1) and days[0].date.weekday() == 0
    assert days[0].made.flags == (WEEKLY, MONTHLY, YEARLY)
    assert days[28].made.flags == (WEEKLY,)               # 29 January
    assert days[35].made.flags == (WEEKLY, MONTHLY)       # 5 February: February's first full
    assert days[364].made.flags == (WEEKLY,)              # 30 December
    assert days[371].made.flags == (WEEKLY, MONTHLY, YEARLY)  # 6 January 2025
    # Only the tiers a policy keeps are flagged.
    assert retention.gfs_flags(RetentionPolicy(monthlies=2), 35) == (MONTHLY,)
    assert retention.gfs_flags(RetentionPolicy(), 35) == ()


def test_a_gfs_full_stays_until_its_tier_has_newer_ones():
    days = play(RetentionPolicy(dailies=7, weeklies=2), 30)
    # Day 13: the chain of day 0 goes, its full stays as a weekly (the newest 2 fulls: 0 and 7).
    assert "f0" not in names(days[13].expired) and "f0" in names(days[13].kept)
    # Day 14 makes the third weekly full: day 0's is the oldest of 3 and goes that day, after the job.
    assert "f0" in names(days[14].on_disk) and names(days[14].expired) == ["f0"]
    monthly = play(RetentionPolicy(dailies=7, monthlies=2), 70)
    # Monthlies: days 0 (January), 35 (February), 63 (March): day 0's goes on day 63.
    assert names(monthly[63].expired) == ["f0"] and "f35" in names(monthly[63].kept)


def test_forever_forward_merges_the_oldest_increment_into_the_full():
    days = play(RetentionPolicy(method="forever-forward", dailies=3), 6)
    assert [d.job for d in days] == [ACTIVE_FULL, INCREMENTAL, INCREMENTAL, MERGE, MERGE, MERGE, MERGE]
    assert days[3].merged == retention.Point(INCREMENT, 1, 1) and not days[3].expired
    # The peak holds today's increment before the merge: 1 full + 3 increments.
    assert names(days[3].on_disk) == ["f0", "i1", "i2", "i3"] and days[3].counts.points == 4
    full = days[3].kept[0]
    assert (full.kind, full.made, full.day) == (FULL, 0, 1) and names(days[3].kept) == ["f0", "i2", "i3"]
    assert days[3].oldest() == days[3].newest_full() == full


def test_reverse_incremental_keeps_the_full_newest_and_deletes_the_oldest_rollback():
    days = play(RetentionPolicy(method="reverse-incremental", dailies=3), 5)
    assert [d.job for d in days] == [ACTIVE_FULL] + [REVERSE_INCREMENTAL] * 5
    assert days[1].made == retention.Point(ROLLBACK, 1, 0)  # the rollback to day 0, made on day 1
    assert days[3].expired == (retention.Point(ROLLBACK, 1, 0),)
    assert [(p.kind, p.day) for p in days[3].kept] == [(ROLLBACK, 1), (ROLLBACK, 2), (FULL, 3)]
    assert days[3].newest_full().day == 3 and days[3].oldest().kind == ROLLBACK


def _peak(policy: RetentionPolicy, days: int) -> retention.Counts:
    return max((d.counts for d in play(policy, days)), key=lambda c: (c.files, c.points))


GFS = [(0, 0, 0), (1, 0, 0), (2, 0, 0), (4, 0, 0), (8, 0, 0), (20, 0, 0), (0, 3, 0), (8, 12, 0), (4, 6, 2),
       (8, 12, 3), (60, 0, 2), (0, 24, 3)]
CASES = [(method, dailies, gfs) for method in retention.PERIODIC_FULLS for dailies in (1, 2, 6, 7, 8, 13, 14, 15, 22,
                                                                                      29, 30, 31, 60)
         for gfs in GFS] + [(method, dailies, (0, 0, 0)) for method in retention.TRANSFORMS
                            for dailies in (1, 2, 7, 14, 30, 60)]
# (full, increment): a full against 20 increments, against 2, against 1 and a tenth of one: which
# of the peak days holds the most bytes turns on it.
SIZES = [(100, 5), (100, 50), (100, 100), (100, 1000)]


def _long_enough(policy: RetentionPolicy) -> int:
    """Days for every tier to fill: the dailies' chains, the weeklies, and a year past the yearlies."""
    return 7 * (policy.dailies + 7 + policy.weeklies) + 35 * policy.monthlies + 371 * (policy.yearlies + 1)


def _weighed(policy: RetentionPolicy, played: list[retention.Day]) -> None:
    """The closed form holds every day of the calendar: in files, and in bytes for every size
    of a full against an increment, with block clone and without; exactly when no tier's
    overlaps depend on the calendar (no monthlies or yearlies)."""
    exact = not (policy.monthlies or policy.yearlies)
    for clone in (False, True):
        cloned = policy.model_copy(update={"block_clone": clone})
        # The calendar makes no file for a compact: its extra full is the closed form's alone.
        compact = {"transform_fulls": peak_counts(cloned).transform_fulls}
        days = {day.counts.model_copy(update=compact) for day in played}
        for full, increment in SIZES:
            most = max(bytes_on(cloned, counts, full, increment) for counts in days)
            planned = peak_bytes(cloned, full, increment)
            assert most == planned if exact else most <= planned, (clone, full, increment)


@pytest.mark.parametrize("method, dailies, gfs", CASES, ids=lambda v: str(v))
def test_the_calendar_peak_is_the_closed_form_or_below_it(method, dailies, gfs):
    weeklies, monthlies, yearlies = gfs
    policy = RetentionPolicy(method=method, dailies=dailies, weeklies=weeklies, monthlies=monthlies, yearlies=yearlies)
    played = play(policy, _long_enough(policy))
    most, closed = _peak(policy, _long_enough(policy)), peak_counts(policy)
    assert (most.points, most.chain_fulls, most.increments) == (closed.points, closed.chain_fulls,
                                                                 closed.increments)
    if monthlies or yearlies:
        # Which monthlies fall among the weeklies depends on the calendar: the closed form keeps the most.
        assert most.files <= closed.files
    else:
        assert (most.files, most.weekly) == (closed.files, closed.weekly)
    _weighed(policy, played)


# Calendars whose fulls fall on other weekdays and other days of the month than 1 January 2024's.
STARTS = [datetime.date(2023, 3, 30), datetime.date(2021, 2, 1), datetime.date(2025, 12, 29),
          datetime.date(2026, 7, 25)]


@pytest.mark.parametrize("dailies, gfs", [(d, g) for d in (1, 7, 8, 30) for g in GFS if g[1] or g[2]],
                         ids=lambda v: str(v))
def test_the_closed_form_holds_every_calendar(dailies, gfs):
    weeklies, monthlies, yearlies = gfs
    policy = RetentionPolicy(dailies=dailies, weeklies=weeklies, monthlies=monthlies, yearlies=yearlies)
    for start in STARTS:
        played = play(policy, _long_enough(policy), start)
        assert played[35].date == start + datetime.timedelta(days=35)
        _weighed(policy, played)


def test_the_byte_peak_of_gfs_falls_on_a_fulls_day():
    # 7 dailies + 4 weeklies: the chain's last day (day 13 + 7k) holds 4 fulls + 12 increments, a
    # full's day 5 fulls + 6 increments (the week's new full beside the 4 weeklies, until retention
    # drops the oldest). With increments of a twentieth of a full, the full's day holds more.
    policy = RetentionPolicy(dailies=7, weeklies=4)
    last_day, fulls_day = retention.peak_days(policy)
    assert (last_day.points, last_day.chain_fulls + last_day.weekly) == (14, 4)
    assert (fulls_day.points, fulls_day.chain_fulls + fulls_day.weekly, fulls_day.increments) == (8, 5, 6)
    assert peak_bytes(policy, 100, 5) == 5 * 100 + 6 * 5 == max(
        bytes_on(policy, day.counts, 100, 5) for day in play(policy, 70))
    # The closed form before issue 40: 4 fulls + 12 increments, 1.15x under.
    assert bytes_on(policy, last_day, 100, 5) == 460
    # Increments as large as a full: the chain's last day holds more.
    assert peak_bytes(policy, 100, 100) == 14 * 100 + 2 * 100


def test_the_repository_plan_counts_with_the_same_rules():
    plan = BackupPolicy(protected="50TB", change_rate="5%", dailies=30, weeklies=8, monthlies=12, yearlies=3)
    assert counts(plan) == peak_counts(plan)
    # The table counts the day holding the most bytes: with 5% increments, the first full of a
    # year (6 chain fulls + 30 increments), not the day with the most chain points (37).
    last_day, fulls_day = retention.peak_days(plan)
    assert last_day.points == 30 + retention.CHAIN
    assert math.ceil(37 / retention.CHAIN) == last_day.chain_fulls
    assert retention_table(plan).counts == fulls_day
    assert (fulls_day.chain_fulls, fulls_day.increments) == (6, 30)


@pytest.mark.parametrize("spelled, text", [
    (retention.flag, "--weeklies 2, --yearlies 1 with --method forever-forward: GFS keeps periodic fulls, and "
                     "forever-forward never makes one"),
    (retention.key, "weeklies = 2, yearlies = 1 with method = forever-forward: GFS keeps periodic fulls, and "
                    "forever-forward never makes one")])
def test_gfs_without_periodic_fulls_is_one_contradiction_however_it_is_spelled(spelled, text):
    policy = RetentionPolicy(method="forever-forward", weeklies=2, yearlies=1)
    problem, fix = retention.gfs_contradiction(policy, spelled)
    assert problem == text and "forward-synthetic" in fix
    assert retention.gfs_contradiction(RetentionPolicy(method="forward-active", monthlies=3)) is None
    # The plan refuses it with the same line.
    with pytest.raises(InputError) as refused:
        check_policy(BackupPolicy(protected="1TB", change_rate=5, method="forever-forward", weeklies=2, yearlies=1))
    assert refused.value.message == retention.gfs_contradiction(policy)[0]
