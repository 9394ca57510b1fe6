"""Field note E's snapshot rule, worked out by hand."""

import pytest

from backupbench.cli import options as cli_options
from backupbench.errors import InputError, RecipeError
from backupbench.sizing.options import SnapshotOptions
from backupbench.sizing.snapshot import first_write_ios, full_cover, snapshot_sizing

GB = 10**9


def test_field_note_e_ten_gb_of_change():
    result = snapshot_sizing(100 * GB, 10 * GB)
    # base = 10 GB x 1.5 .. 2.0 = 15 .. 20 GB
    assert (result.low.base, result.high.base) == (15 * GB, 20 * GB)
    # margin = base x 1.3 .. 1.5 = 19.5 .. 30 GB
    assert (result.low.margin, result.high.margin) == (19_500_000_000, 30 * GB)
    # size = base + margin = 34.5 .. 50 GB
    assert (result.low.size, result.high.size) == (34_500_000_000, 50 * GB)
    assert result.low.total == result.low.size
    assert result.first_write_ios == 3 and result.write_speed_factor == pytest.approx(1 / 3)
    assert (result.latency_alert_ms, result.load_alert) == (100.0, 2.0)


def test_two_snapshots_cost_five_ios_and_double_the_space():
    result = snapshot_sizing(100 * GB, 10 * GB, snapshots=2)
    assert result.first_write_ios == 5 and result.write_speed_factor == pytest.approx(0.2)
    assert result.high.total == 2 * 50 * GB
    assert [first_write_ios(n) for n in (0, 1, 2, 3)] == [1, 3, 5, 7]


def test_chosen_factors_and_rounding_up():
    result = snapshot_sizing(100 * GB, 10 * GB, factors=(1.75, 1.75), margin_factors=(1.4, 1.4))
    assert result.low == result.high
    assert result.low.base == 17_500_000_000 and result.low.margin == 24_500_000_000
    assert snapshot_sizing(10, 1).low.base == 2  # 1.5 bytes rounds up


def test_full_cover_counts_the_exception_table():
    # 2 MiB = 512 chunks of 4 KiB; 256 entries per metadata chunk -> 2 chunks, plus the header.
    assert full_cover(2 * 2**20) == (512 + 2 + 1) * 4096
    big = snapshot_sizing(20 * GB, 15 * GB)  # 50% change x 2.0 x 2.5 -> far beyond the origin
    assert any("never needs more than" in note for note in big.notes)


@pytest.mark.parametrize("origin,change,kwargs,message", [
    (100 * GB, 0, {}, "--change must be above 0"),
    (100 * GB, 101 * GB, {}, "at most the origin"),
    (100 * GB, 10 * GB, {"snapshots": 0}, "--snapshots"),
    (100 * GB, 10 * GB, {"factors": (2.0, 1.5)}, "--factor-low"),
    (100 * GB, 10 * GB, {"margin_factors": (1.5, 1.3)}, "--margin-low"),
])
def test_errors(origin, change, kwargs, message):
    with pytest.raises(InputError, match=message):
        snapshot_sizing(origin, change, **kwargs)


def test_change_as_a_share_of_the_origin():
    options = cli_options.build(SnapshotOptions, {"origin": "100GB", "change": "10%"})
    assert options.change_bytes() == 10 * GB
    assert cli_options.build(SnapshotOptions, {"origin": "100GB", "change": "12.5%"}).change_bytes() == 12_500_000_000
    assert cli_options.build(SnapshotOptions, {"origin": "100GB", "change": "1GiB"}).change_bytes() == 2**30
    with pytest.raises(InputError, match="at most 100%"):
        cli_options.build(SnapshotOptions, {"origin": "100GB", "change": "150%"}).change_bytes()
    with pytest.raises(RecipeError, match="^--change:"):
        cli_options.build(SnapshotOptions, {"origin": "100GB", "change": "lots"})
