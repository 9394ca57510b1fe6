import json

import pytest

from backupbench.engines import fio_json
from backupbench.workloads.kb2014 import OPERATION_NAMES, OPERATIONS, select


def test_effective_speed_rules():
    r, w = 100.0, 200.0
    assert OPERATIONS["active-full"].effective_rate(r, w) == w
    assert OPERATIONS["synthetic-full"].effective_rate(r, w) == 150.0
    assert OPERATIONS["reverse-incremental"].effective_rate(r, w) == 100.0
    assert OPERATIONS["restore-sequential"].effective_rate(r, w) == r
    assert OPERATIONS["restore-random"].effective_rate(r, w) == r


def test_field_note_c_arithmetic():
    # Field note C: 103 r + 108 w -> 105.5 ; 9.97 r + 23.1 w -> 11.
    assert OPERATIONS["synthetic-full"].effective_rate(103, 108) == pytest.approx(105.5)
    assert OPERATIONS["reverse-incremental"].effective_rate(9.97, 23.1) == pytest.approx(11.02, abs=0.01)


def test_reverse_incremental_is_two_writes_per_read():
    op = OPERATIONS["reverse-incremental"]
    assert op.rwmixwrite == 67 and op.ios_per_block == 3
    assert "1 read + 2 writes" in op.io_per_block_text


def test_recorded_fixture_effective_speed(fixtures):
    raw = json.loads((fixtures / "fio" / "randrw50.json").read_text())
    summary = fio_json.parse(raw)
    expected = (raw["jobs"][0]["read"]["bw_bytes"] + raw["jobs"][0]["write"]["bw_bytes"]) / 2
    assert OPERATIONS["synthetic-full"].effective_rate(summary.read.bw_bytes, summary.write.bw_bytes) == expected


def test_select_keeps_suite_order():
    assert [op.name for op in select(["restore-random", "active-full"])] == ["active-full", "restore-random"]
    assert tuple(op.name for op in select(OPERATION_NAMES)) == OPERATION_NAMES
