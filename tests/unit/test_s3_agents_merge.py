"""The pure parts of `run --workload s3 --agents`: parsing, shares, merging, the compact
latencies, the keep/resume rules of s3-run, and the options refused with agents."""

from __future__ import annotations

import random

import pytest

from backupbench.agent.protocol import ProtocolError, pack_sorted, parse_request, unpack_sorted
from backupbench.errors import InputError
from backupbench.runner.agents import agent_prefix, merge_phase, on_agents, parse_agents, split
from backupbench.stats import nearest_rank
from backupbench.workloads.s3 import S3Workload
from backupbench.workloads.s3_options import S3Options

S3 = {"kind": "s3-run", "endpoint": "http://127.0.0.1:9000", "bucket": "bench", "prefix": "backupbench/r1.a/",
      "objects": 10, "object_size": 4096, "access_key": "a", "secret_key": "s"}


def _parse(**changes):
    import json
    return parse_request(json.dumps({**S3, **changes}).encode())


def test_agents_are_parsed_and_labelled_by_address():
    refs = parse_agents(" 10.0.0.5:7480, 10.0.0.6:7481 ,[fd00::1]:7480")
    assert [r.label for r in refs] == ["10.0.0.5-7480", "10.0.0.6-7481", "fd00__1-7480"]
    assert agent_prefix("20260101T000000-ab12", refs[2].label) == "backupbench/20260101T000000-ab12.fd00__1-7480/"
    with pytest.raises(InputError, match="twice"):
        parse_agents("10.0.0.5:7480,10.0.0.5:7480")
    with pytest.raises(InputError):
        parse_agents("host-without-port")
    with pytest.raises(InputError, match="empty"):
        parse_agents(" , ")


def test_split_gives_near_equal_shares_that_add_up():
    assert split(10, 4) == [3, 3, 2, 2] and sum(split(1001, 7)) == 1001 and split(2, 4) == [1, 1, 0, 0]


@pytest.mark.parametrize("values", [[], [0], [5, 5, 5], sorted(random.Random(1).randrange(10**9) for _ in range(5000))])
def test_sorted_latencies_survive_packing_exactly(values):
    assert unpack_sorted(pack_sorted(values)) == values


def _phase(latencies: list[int], start: float, runtime: float, size: int = 100) -> dict:
    lat = sorted(latencies)
    return {"op": "get", "started_wall": start, "errors": {"timeout": 1},
            "figures": {"ops": float(len(lat)), "errors": 1.0, "bytes": float(len(lat) * size), "runtime": runtime,
                        "lat_p99_ns": nearest_rank(lat, 99), "lat_p50_ns": nearest_rank(lat, 50)},
            "lat_ns": pack_sorted(lat), "ttfb_ns": pack_sorted([v // 2 for v in lat])}


def test_merge_sums_counts_rates_over_the_common_wall_time_and_merges_percentiles():
    rng = random.Random(7)
    fast = [rng.randrange(1_000, 2_000) for _ in range(900)]
    slow = [rng.randrange(5_000, 90_000) for _ in range(100)]
    merged, hosts = merge_phase("get", {"a": _phase(fast, 100.0, 4.0), "b": _phase(slow, 100.5, 4.0)})
    assert merged["ops"] == 1000 and merged["errors"] == 2 and merged["bytes"] == 100_000
    assert merged["runtime"] == pytest.approx(4.5) and hosts["b"]["start_offset_s"] == pytest.approx(0.5)
    assert merged["objects_per_s"] == pytest.approx(1000 / 4.5)
    # The percentile of all requests together, not the mean of the two p99s.
    assert merged["lat_p99_ns"] == nearest_rank(sorted(fast + slow), 99)
    assert hosts["a"]["lat_p99_ns"] <= merged["lat_p99_ns"] <= hosts["b"]["lat_p99_ns"]
    assert merged["lat_p99_ns"] != (hosts["a"]["lat_p99_ns"] + hosts["b"]["lat_p99_ns"]) / 2
    assert merged["ttfb_p50_ns"] == nearest_rank(sorted(v // 2 for v in fast + slow), 50)
    assert merged["hosts_reporting"] == 2


def test_a_fresh_s3_run_starts_with_put_and_only_a_resumed_one_may_not():
    assert _parse(ops=["get"], resume=True, keep=True).resume
    assert _parse(ops=["put"], keep=True, start_in=2.0).keep
    for bad in ({"ops": ["get"]}, {"ops": ["put", "get"], "resume": True}, {"start_in": 61.0},
                {"ops": ["delete", "get"], "resume": True}):
        with pytest.raises(ProtocolError):
            _parse(**bad)


def _workload(**options) -> S3Workload:
    return S3Workload(S3Options.model_validate({"endpoint": "http://127.0.0.1:9000", "bucket": "bench",
                                                "objects": 100, **options}))


@pytest.mark.parametrize("options, flag", [({"duration": 10, "objects": None}, "--duration"),
                                           ({"s3_phases": "put,mixed"}, "mixed"),
                                           ({"object_size": "1MiB-2MiB"}, "range"),
                                           ({"create_bucket": True}, "--create-bucket")])
def test_what_an_agent_cannot_run_is_refused_in_one_line(tmp_path, options, flag):
    token = tmp_path / "token"
    token.write_text("t" * 32)
    with pytest.raises(InputError, match=flag):
        on_agents("s3", _workload(**options), "10.0.0.5:7480", token)


def test_agents_need_the_s3_workload_and_a_token_file(tmp_path):
    with pytest.raises(InputError, match="--workload s3"):
        on_agents("kb2014", object(), "10.0.0.5:7480", tmp_path / "token")
    with pytest.raises(InputError, match="agent-token-file"):
        on_agents("s3", _workload(), "10.0.0.5:7480", None)
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(InputError, match="empty"):
        on_agents("s3", _workload(), "10.0.0.5:7480", tmp_path / "empty")
    token = tmp_path / "token"
    token.write_text("t" * 32 + "\n")
    built = on_agents("s3", _workload(concurrency=9, objects=10), "10.0.0.5:7480,10.0.0.6:7480", token)
    assert built.token == "t" * 32
    assert built.shares() == {"10.0.0.5-7480": (5, 5), "10.0.0.6-7480": (5, 4)}
    with pytest.raises(InputError, match="fewer"):
        on_agents("s3", _workload(objects=1), "10.0.0.5:7480,10.0.0.6:7480", token)
