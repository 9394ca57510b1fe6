"""The restore-point arithmetic, worked out by hand for each backup method, with and without
block clone, with GFS; and the closed-form peak of a weekly chain against a day-by-day simulation."""

import math

import pytest

from backupbench.sizing.policy import BackupPolicy
from backupbench.sizing.restore_points import counts, full_size, grown, incremental_size, retention_table

TB = 10**12


def policy(**values) -> BackupPolicy:
    return BackupPolicy(**{"protected": "50TB", "change_rate": "5%", **values})


def rows(table) -> dict[str, tuple[int, int]]:
    """kind -> (count, bytes each on day one)."""
    return {row.kind: (row.count, row.each_bytes[0]) for row in table.rows}


def test_full_and_increment_sizes_are_exact_and_rounded_up():
    # 50 TB at 2:1 = 25 TB; 5% of 50 TB = 2.5 TB changed, 1.25 TB stored.
    assert full_size(50 * TB, 2) == 25 * TB
    assert incremental_size(50 * TB, 5, 2) == 1_250_000_000_000
    # 1,001 bytes: 1,001 / 2 = 500.5 -> 501; 1,001 x 5% / 2 = 25.025 -> 26; 1,001 x 5.5% / 2.5 = 22.022 -> 23.
    assert full_size(1001, 2) == 501
    assert incremental_size(1001, 5, 2) == 26
    assert incremental_size(1001, 5.5, 2.5) == 23
    # 10% a year for two years: 50 TB x 1.1 x 1.1 = 60.5 TB, exactly (no float drift).
    assert grown(50 * TB, 10, 2) == 60_500_000_000_000
    assert grown(7, 10, 1) == 8  # 7.7 -> 8


def test_forward_synthetic_with_gfs_without_block_clone():
    table = retention_table(policy(dailies=30, weeklies=8, monthlies=12, yearlies=3, horizon=1))
    # The day with the most points: 30 dailies + 6 points of the oldest chain + today's = 37, ceil(37 / 7) = 6
    # fulls; 8 weeklies, 6 of them the chain's fulls: 2 more; 12 monthlies, floor(8 / 5) = 1 among the
    # weeklies: 11; 3 yearlies, floor(12 / 12) = 1 among the monthlies: 2.
    most_points = counts(policy(dailies=30, weeklies=8, monthlies=12, yearlies=3))
    assert (most_points.points, most_points.chain_fulls, most_points.increments) == (37, 6, 31)
    assert (most_points.weekly, most_points.monthly, most_points.yearly) == (2, 11, 2)
    # The peak in bytes is a full's day (a year's first): 5 chains of 7 + today's full = 36 points, 6 fulls;
    # the weekly tier holds today's full beside its 8: 9 - 6 = 3 more; the monthlies' 13 with today's, of
    # which today's and floor((9 - 1) / 5) = 1 more are weeklies: 11; the yearlies' 4 with today's, of which
    # today's and floor(12 / 12) = 1 more are monthlies: 2. 3 fulls more, 1 increment less: 75 - 1.25 TB more.
    c = table.counts
    assert (c.points, c.chain_fulls, c.increments, c.weekly, c.monthly, c.yearly) == (36, 6, 30, 3, 11, 2)
    assert rows(table) == {"fulls in the daily chains": (6, 25 * TB), "increments": (30, 1_250_000_000_000),
                           "weekly GFS fulls": (3, 25 * TB), "monthly GFS fulls": (11, 25 * TB),
                           "yearly GFS fulls": (2, 25 * TB)}
    # (6 + 3 + 11 + 2) fulls x 25 TB + 30 x 1.25 TB = 550 + 37.5 = 587.5 TB; + 10% workspace = 646.25 TB.
    # (Before issue 40, the day with the most points: 563.75 TB, 620.125 TB with the workspace.)
    assert table.workspace_bytes[0] == 58_750_000_000_000
    assert table.total_bytes == [646_250_000_000_000, 646_250_000_000_000]  # no growth: year 1 as day one


def test_forward_synthetic_with_block_clone_counts_changed_blocks():
    table = retention_table(policy(dailies=30, weeklies=8, monthlies=12, yearlies=3, block_clone=True, horizon=1))
    # A full's day again: one more weekly (7 days of changes) for one daily point less (one day's).
    assert rows(table) == {
        "current data (one full)": (1, 25 * TB),
        "daily points (changed blocks)": (35, 1_250_000_000_000),       # the 36 chain points but the newest
        "weekly GFS fulls (changed blocks)": (3, 8_750_000_000_000),    # 7 days x 1.25 TB
        "monthly GFS fulls (changed blocks)": (11, 25 * TB),            # 35 x 1.25 = 43.75 TB: at most a full
        "yearly GFS fulls (changed blocks)": (2, 25 * TB),
    }
    # 25 + 35 x 1.25 + 3 x 8.75 + 11 x 25 + 2 x 25 = 25 + 43.75 + 26.25 + 275 + 50 = 420 TB; x 1.1 = 462 TB.
    assert table.total_bytes[0] == 462_000_000_000_000


def test_block_clone_shrinks_monthlies_when_a_month_changes_less_than_a_full():
    table = retention_table(policy(change_rate="1%", dailies=14, monthlies=6, block_clone=True, workspace=0))
    # I = 50 TB x 1% / 2 = 0.25 TB. Chain: 14 + 7 = 21 points, 3 fulls; monthlies: 3 // 5 = 0 covered.
    # Monthly: 35 days x 0.25 TB = 8.75 TB each, not a full.
    assert rows(table)["monthly GFS fulls (changed blocks)"] == (6, 8_750_000_000_000)
    # 25 + 20 x 0.25 + 6 x 8.75 = 25 + 5 + 52.5 = 82.5 TB.
    assert table.total_bytes[0] == 82_500_000_000_000


def test_forward_active_gains_nothing_from_block_clone():
    plain = retention_table(policy(method="forward-active", dailies=14, weeklies=4))
    cloned = retention_table(policy(method="forward-active", dailies=14, weeklies=4, block_clone=True))
    assert plain.total_bytes == cloned.total_bytes
    # A full's day: 3 chains (2 of 7 points and today's full): 15 points, 3 fulls, 12 increments; the weekly
    # tier holds today's full beside its 4: 5 - 3 = 2 more: 5 x 25 + 12 x 1.25 = 140 TB; x 1.1 = 154 TB (the
    # day with the most points, 21 points: 4 x 25 + 18 x 1.25 = 122.5 TB).
    assert rows(plain)["weekly GFS fulls"] == (2, 25 * TB)
    assert plain.total_bytes[0] == 154_000_000_000_000


def test_monthlies_without_weeklies_are_taken_from_the_chains_fulls():
    c = counts(policy(method="forward-active", dailies=7, monthlies=3))
    # 7 + 7 = 14 points, 2 fulls; no weekly GFS: the weekly fulls kept are the chain's 2; 2 // 5 = 0 covered.
    assert (c.chain_fulls, c.weekly, c.monthly) == (2, 0, 3)
    # 40 dailies: 47 points, 7 fulls: the newest monthly is among them (7 // 5 = 1).
    assert counts(policy(dailies=40, monthlies=3)).monthly == 2


def test_yearlies_covered_by_weeklies_when_there_are_no_monthlies():
    # 60 weekly fulls span more than a year: floor(60 / 53) = 1 yearly is one of them.
    assert counts(policy(dailies=7, weeklies=60, yearlies=2)).yearly == 1
    assert counts(policy(dailies=7, weeklies=52, yearlies=2)).yearly == 2
    assert counts(policy(dailies=7, monthlies=24, yearlies=3)).yearly == 1  # 24 // 12 = 2 covered


@pytest.mark.parametrize("method, label", [("forever-forward", "increments"), ("reverse-incremental", "rollbacks")])
def test_transform_methods_keep_one_full_and_an_extra_while_merging(method, label):
    table = retention_table(policy(method=method, dailies=14))
    # 1 full + 14 increments (today's, before the merge / before the oldest rollback goes), the gaps of the full
    # rewritten in place (a quarter of it) + the compact's full: 2 x 25 + 14 x 1.25 + 6.25 = 73.75 TB; x 1.1 =
    # 81.125 TB.
    assert rows(table) == {"fulls in the daily chains": (1, 25 * TB), label: (14, 1_250_000_000_000),
                           "gaps in the full rewritten in place": (1, 6_250_000_000_000),
                           "extra full during merge/compact": (1, 25 * TB)}
    assert table.total_bytes[0] == 81_125_000_000_000
    cloned = retention_table(policy(method=method, dailies=14, block_clone=True))
    # Merged and compacted by cloning: no extra full; the gaps stay until a compact. 25 + 17.5 + 6.25 = 48.75 TB;
    # x 1.1 = 53.625 TB.
    assert "extra full during merge/compact" not in rows(cloned)
    assert rows(cloned)["gaps in the full rewritten in place"] == (1, 6_250_000_000_000)
    assert cloned.total_bytes[0] == 53_625_000_000_000


def test_growth_per_year_of_the_horizon():
    table = retention_table(policy(method="forever-forward", dailies=10, growth="10%", horizon=2, workspace=0,
                                   block_clone=True))
    # Year 0: 50 TB; year 1: 55 TB; year 2: 60.5 TB. Fulls 25 / 27.5 / 30.25 TB; increments 5% / 2 of each.
    assert table.protected_bytes == [50 * TB, 55 * TB, 60_500_000_000_000]
    assert table.full_bytes == [25 * TB, 27_500_000_000_000, 30_250_000_000_000]
    assert table.incremental_bytes == [1_250_000_000_000, 1_375_000_000_000, 1_512_500_000_000]
    # 1 full + 10 increments + the full's gaps (a quarter of it) each year: 25 + 12.5 + 6.25 = 43.75;
    # 27.5 + 13.75 + 6.875 = 48.125; 30.25 + 15.125 + 7.5625 = 52.9375 TB.
    assert table.total_bytes == [43_750_000_000_000, 48_125_000_000_000, 52_937_500_000_000]


def _simulated_peak(dailies: int, full: int, increment: int, days: int = 400) -> int:
    """Veeam's retention day by day: a full every 7th day, the oldest chain deleted once the
    newer points alone hold the dailies; the most bytes on disk after any day's backup."""
    chains: list[int] = []
    peak = 0
    for day in range(days):
        if day % 7 == 0:
            chains.append(1)
        else:
            chains[-1] += 1
        points = sum(chains)
        peak = max(peak, len(chains) * full + (points - len(chains)) * increment)
        while len(chains) > 1 and points - chains[0] >= dailies:
            points -= chains.pop(0)
    return peak


@pytest.mark.parametrize("dailies", [1, 6, 7, 8, 13, 14, 15, 30, 31, 60])
def test_weekly_chain_peak_matches_a_day_by_day_simulation(dailies):
    c = counts(policy(dailies=dailies))
    assert c.points == dailies + 7 and c.chain_fulls == math.ceil((dailies + 7) / 7)
    assert c.chain_fulls * 20 + c.increments == _simulated_peak(dailies, full=20, increment=1)
