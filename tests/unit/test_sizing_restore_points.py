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
    c = table.counts
    # Chains of 7: 30 dailies + 6 points of the oldest chain + today's = 37 points, ceil(37 / 7) = 6 fulls.
    assert (c.points, c.chain_fulls, c.increments) == (37, 6, 31)
    # 8 weeklies, 6 of them the chain's fulls: 2 more. 12 monthlies, floor(8 / 5) = 1 among the weeklies: 11.
    # 3 yearlies, floor(12 / 12) = 1 among the monthlies: 2.
    assert (c.weekly, c.monthly, c.yearly, c.transform_fulls) == (2, 11, 2, 0)
    assert rows(table) == {"fulls in the daily chains": (6, 25 * TB), "increments": (31, 1_250_000_000_000),
                           "weekly GFS fulls": (2, 25 * TB), "monthly GFS fulls": (11, 25 * TB),
                           "yearly GFS fulls": (2, 25 * TB)}
    # (6 + 2 + 11 + 2) fulls x 25 TB + 31 x 1.25 TB = 525 + 38.75 = 563.75 TB; + 10% workspace = 620.125 TB.
    assert table.workspace_bytes[0] == 56_375_000_000_000
    assert table.total_bytes == [620_125_000_000_000, 620_125_000_000_000]  # no growth: year 1 as day one


def test_forward_synthetic_with_block_clone_counts_changed_blocks():
    table = retention_table(policy(dailies=30, weeklies=8, monthlies=12, yearlies=3, block_clone=True, horizon=1))
    assert rows(table) == {
        "current data (one full)": (1, 25 * TB),
        "daily points (changed blocks)": (36, 1_250_000_000_000),       # the 37 chain points but the newest
        "weekly GFS fulls (changed blocks)": (2, 8_750_000_000_000),    # 7 days x 1.25 TB
        "monthly GFS fulls (changed blocks)": (11, 25 * TB),            # 35 x 1.25 = 43.75 TB: at most a full
        "yearly GFS fulls (changed blocks)": (2, 25 * TB),
    }
    # 25 + 36 x 1.25 + 2 x 8.75 + 11 x 25 + 2 x 25 = 25 + 45 + 17.5 + 275 + 50 = 412.5 TB; x 1.1 = 453.75 TB.
    assert table.total_bytes[0] == 453_750_000_000_000


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
    # 21 points, 3 fulls, 18 increments; 4 weeklies - 3 = 1 more full: 4 x 25 + 18 x 1.25 = 122.5 TB; x 1.1 = 134.75.
    assert rows(plain)["weekly GFS fulls"] == (1, 25 * TB)
    assert plain.total_bytes[0] == 134_750_000_000_000


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
    # 1 full + 14 increments (today's, before the merge / before the oldest rollback goes) + the compact's full:
    # 2 x 25 + 14 x 1.25 = 67.5 TB; x 1.1 = 74.25 TB.
    assert rows(table) == {"fulls in the daily chains": (1, 25 * TB), label: (14, 1_250_000_000_000),
                           "extra full during merge/compact": (1, 25 * TB)}
    assert table.total_bytes[0] == 74_250_000_000_000
    cloned = retention_table(policy(method=method, dailies=14, block_clone=True))
    # Merged and compacted by cloning: no extra full. 25 + 17.5 = 42.5 TB; x 1.1 = 46.75 TB.
    assert "extra full during merge/compact" not in rows(cloned)
    assert cloned.total_bytes[0] == 46_750_000_000_000


def test_growth_per_year_of_the_horizon():
    table = retention_table(policy(method="forever-forward", dailies=10, growth="10%", horizon=2, workspace=0,
                                   block_clone=True))
    # Year 0: 50 TB; year 1: 55 TB; year 2: 60.5 TB. Fulls 25 / 27.5 / 30.25 TB; increments 5% / 2 of each.
    assert table.protected_bytes == [50 * TB, 55 * TB, 60_500_000_000_000]
    assert table.full_bytes == [25 * TB, 27_500_000_000_000, 30_250_000_000_000]
    assert table.incremental_bytes == [1_250_000_000_000, 1_375_000_000_000, 1_512_500_000_000]
    # 1 full + 10 increments each year: 25 + 12.5 = 37.5; 27.5 + 13.75 = 41.25; 30.25 + 15.125 = 45.375 TB.
    assert table.total_bytes == [37_500_000_000_000, 41_250_000_000_000, 45_375_000_000_000]


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
