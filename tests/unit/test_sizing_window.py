"""Backup windows, worked out by hand."""

import pytest

from backupbench.cli import options as cli_options
from backupbench.errors import InputError
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
from backupbench.sizing.options import WindowOptions
from backupbench.sizing.percent import parse_percent, percent_of
from backupbench.sizing.window import measured_windows, needed_speed, window_estimate

MiB = 2**20
TiB = 2**40


def test_ten_tib_at_200_mib_s():
    result = window_estimate(10 * TiB, 200 * MiB)
    # 10 x 1,048,576 MiB / 200 MiB/s = 52,428.8 s = 14.56 h
    assert result.full_seconds == pytest.approx(52_428.8)
    assert round(result.full_seconds / 3600, 2) == 14.56
    assert result.incremental_seconds is None and result.full_fits is None


def test_speed_needed_for_a_window():
    # 10 TiB in 8 h: 10,485,760 MiB / 28,800 s = 364.09 MiB/s
    assert needed_speed(10 * TiB, 8 * 3600) / MiB == pytest.approx(10 * 1024 * 1024 / 28_800)
    result = window_estimate(10 * TiB, 200 * MiB, change_percent=5, window_seconds=8 * 3600)
    assert result.incremental_size == 512 * 2**30  # 5% of 10 TiB, exact
    assert result.incremental_seconds == pytest.approx(512 * 1024 / 200)  # 2,621.44 s
    assert result.full_fits is False and result.incremental_fits is True
    assert result.needed_incremental_speed == pytest.approx(512 * 2**30 / 28_800)


def test_errors():
    with pytest.raises(InputError, match="--change-rate"):
        window_estimate(TiB, 100 * MiB, change_percent=0)
    with pytest.raises(InputError, match="--window"):
        window_estimate(TiB, window_seconds=0)
    with pytest.raises(InputError, match="speed"):
        window_estimate(TiB, 0)


def test_percentages():
    assert parse_percent("5%") == parse_percent("5") == 5.0
    assert percent_of(1000, 12.5) == 125 and percent_of(10, 33.3) == 4  # 3.33 rounds up
    with pytest.raises(ValueError):
        parse_percent("five")


def _run(names_and_speeds):
    run = RunRecord(run_id="r1", kind="kb2014", target="/srv", settings={})
    for name, speed in names_and_speeds:
        run.operations.append(OperationRecord(name=name, pattern="", status=COMPLETE,
                                              figures={"effective_bw": speed}))
    return run


def test_measured_windows_from_a_run():
    run = _run([("active-full", 100 * MiB), ("synthetic-full", 50 * MiB), ("reverse-incremental", 25 * MiB),
                ("restore-random", 20 * MiB)])
    rows = {row.operation: row for row in measured_windows(run, 10 * TiB, change_percent=10,
                                                            window_seconds=24 * 3600)}
    full = rows["active-full"]
    assert full.full_seconds == pytest.approx(10 * TiB / (100 * MiB))  # 104,857.6 s
    assert full.speed == pytest.approx(100 * MiB) and full.full_fits is False
    assert full.incremental_label == "forward incremental"
    assert full.incremental_seconds == pytest.approx(TiB / (100 * MiB))  # 10% = 1 TiB
    assert rows["reverse-incremental"].incremental_seconds == pytest.approx(TiB / (25 * MiB))
    assert rows["synthetic-full"].incremental_label == "forever-forward merge"
    assert rows["restore-random"].incremental_seconds is None and rows["restore-random"].layout is None


def test_measured_windows_of_an_apply_run_go_layout_by_layout():
    run = _run([("linear/active-full", 50 * MiB), ("striped/active-full", 200 * MiB)])
    rows = measured_windows(run, TiB)
    assert [(row.layout, row.operation) for row in rows] == [("linear", "active-full"), ("striped", "active-full")]
    assert rows[1].full_seconds == pytest.approx(TiB / (200 * MiB))
    assert measured_windows(_run([]), TiB) == []


def test_options_parse_units():
    options = cli_options.build(WindowOptions, {"backup_size": "10TiB", "speed": "200MiB/s", "window": "8h",
                                                "change_rate": "5%"})
    assert (options.backup_size, options.speed, options.window, options.change_rate) == \
        (10 * TiB, 200 * MiB, 8 * 3600.0, 5.0)
    assert cli_options.build(WindowOptions, {"backup_size": "1TB", "speed": "50MB/s"}).speed == 50_000_000
