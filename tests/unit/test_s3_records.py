"""Figures from raw per-request records, checked against values computed here by hand."""

from __future__ import annotations

import gzip
import math
import random

import pytest

from backupbench.engines.s3_records import (OpRecord, errors_by_kind, format_records, parse_records, phase_figures,
                                            read_records, retried_by_kind, written_keys, attempted_keys)
from backupbench.errors import EngineError

MS = 1_000_000


def nearest_rank(values: list[int], p: float) -> float:
    """Written independently of the code under test: sort, take the ceil(p/100 * n)-th value."""
    ordered = sorted(values)
    return float(ordered[max(1, math.ceil(p / 100 * len(ordered))) - 1])


def make(op="put", n=200, seed=1, errors=()):
    rng = random.Random(seed)
    records = []
    for i in range(n):
        start = rng.randrange(0, 1000) * MS
        latency = rng.randrange(1, 400) * MS + rng.randrange(0, MS)
        first = start + latency // 3
        error = errors[i] if i < len(errors) else ""
        size = 0 if error or op == "delete" else 1 << 20
        records.append(OpRecord(op, i, i % 8, start, first, start + latency, size, 200 if not error else 503, error))
    return records


def test_put_figures():
    records = make("put")
    figures = phase_figures(records, "put")
    end = max(r.end_ns for r in records)
    assert figures["ops"] == 200 and figures["errors"] == 0
    assert figures["bytes"] == 200 * 2**20
    assert figures["runtime"] == pytest.approx(end / 1e9)
    assert figures["effective_bw"] == pytest.approx(200 * 2**20 / (end / 1e9))
    assert figures["objects_per_s"] == pytest.approx(200 / (end / 1e9))
    latencies = [r.end_ns - r.start_ns for r in records]
    for p in (50, 90, 99):
        assert figures[f"lat_p{p}_ns"] == nearest_rank(latencies, p)
    assert "ttfb_p50_ns" not in figures


def test_get_figures_add_time_to_first_byte():
    records = make("get")
    figures = phase_figures(records, "get")
    ttfb = [r.first_byte_ns - r.start_ns for r in records]
    assert figures["ttfb_p50_ns"] == nearest_rank(ttfb, 50)
    assert figures["ttfb_p99_ns"] == nearest_rank(ttfb, 99)
    assert figures["ttfb_p50_ns"] < figures["lat_p50_ns"]


def test_failed_requests_count_as_errors_not_as_data():
    records = make("put", n=10, errors=("SlowDown", "timeout", "SlowDown"))
    figures = phase_figures(records, "put")
    ok = records[3:]
    assert figures["ops"] == 7 and figures["errors"] == 3
    assert figures["bytes"] == 7 * 2**20
    # the phase lasts until the last request ended, failed ones included
    assert figures["runtime"] == pytest.approx(max(r.end_ns for r in records) / 1e9)
    assert figures["lat_p50_ns"] == nearest_rank([r.end_ns - r.start_ns for r in ok], 50)
    assert errors_by_kind(records) == {"SlowDown": 2, "timeout": 1}
    assert written_keys(records) == set(range(3, 10))
    assert attempted_keys(records) == set(range(10))


def test_delete_moves_no_bytes_and_get_without_first_byte_is_skipped():
    figures = phase_figures(make("delete", n=5), "delete")
    assert figures["bytes"] == 0 and figures["effective_bw"] == 0 and figures["ops"] == 5
    records = [OpRecord("get", 0, 0, 0, -1, 10, 1, 200), OpRecord("get", 1, 0, 0, 4, 10, 1, 200)]
    assert phase_figures(records, "get")["ttfb_p99_ns"] == 4.0


def test_empty_phase_is_all_zero():
    figures = phase_figures([], "get")
    assert figures["ops"] == 0 and figures["runtime"] == 0 and figures["effective_bw"] == 0
    assert figures["lat_p99_ns"] == 0 and figures["ttfb_p50_ns"] == 0


def test_percentiles_on_a_known_list():
    records = [OpRecord("put", i, 0, 0, -1, (i + 1) * MS, 1, 200) for i in range(100)]
    figures = phase_figures(records, "put")
    assert (figures["lat_p50_ns"], figures["lat_p90_ns"], figures["lat_p99_ns"]) == (50 * MS, 90 * MS, 99 * MS)


def test_records_round_trip_through_gzip_csv(tmp_path):
    records = make("get", n=50, errors=("NoSuchKey",))
    path = tmp_path / "get.ops.csv.gz"
    with gzip.open(path, "wt") as handle:
        handle.write(format_records(records))
    assert read_records(path) == records


def test_records_in_the_load_generator_format():
    text = ("op,key,worker,start_ns,first_byte_ns,end_ns,bytes,status,error,retries,retry_error\n"
            "put,0,3,100,900,1000,1048576,200,,2,SlowDown\n"
            "put,1,4,150,-1,2000,0,0,connection-refused,0,\n")
    records = parse_records(text.splitlines())
    assert records[0] == OpRecord("put", 0, 3, 100, 900, 1000, 1048576, 200, "", 2, "SlowDown")
    assert records[1].error == "connection-refused" and not records[1].ok and records[1].retries == 0


def test_records_from_before_retries_were_counted_still_read():
    text = ("op,key,worker,start_ns,first_byte_ns,end_ns,bytes,status,error\n"
            "put,0,3,100,900,1000,1048576,200,\n")
    assert parse_records(text.splitlines()) == [OpRecord("put", 0, 3, 100, 900, 1000, 1048576, 200, "", 0, "")]


def test_retried_requests_are_counted_apart_from_successes_and_failures():
    records = make("put", n=10, errors=("SlowDown",))
    records[0] = OpRecord("put", 0, 0, 0, 5, 10, 0, 503, "SlowDown", 2, "SlowDown")  # failed after 2 retries
    records[3] = OpRecord("put", 3, 0, 0, 5, 10, 1 << 20, 200, "", 1, "InternalError")
    records[4] = OpRecord("put", 4, 0, 0, 5, 10, 1 << 20, 200, "", 1, "SlowDown")
    figures = phase_figures(records, "put")
    assert (figures["ops"], figures["errors"], figures["retried"], figures["retries"]) == (9, 1, 3, 4)
    assert retried_by_kind(records) == {"SlowDown": 2, "InternalError": 1}
    assert phase_figures(make("get", n=5), "get")["retried"] == 0


def test_bad_records_are_an_engine_error(tmp_path):
    with pytest.raises(EngineError, match="columns"):
        parse_records(["a,b,c", "1,2,3"])
    path = tmp_path / "x.ops.csv.gz"
    path.write_bytes(b"not gzip")
    with pytest.raises(EngineError, match="cannot read"):
        read_records(path)
