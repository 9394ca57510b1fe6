"""A mixed S3 phase from N agents: each agent's result carries its per-kind latencies
(agent/runs.py), the controller merges them per kind (runner/agents_merge.py) into the figures
a mixed phase from one host has (engines/s3_records.mixed_figures), so every output shows the
same per-kind rows and the multipart count."""

from __future__ import annotations

import json

import pytest

from backupbench.agent.protocol import ProtocolError, parse_request
from backupbench.agent.runs import _phase_result
from backupbench.engines.s3 import PhaseRun
from backupbench.engines.s3_records import OpRecord, mixed_figures
from backupbench.results.model import COMPLETE, OperationRecord
from backupbench.report.tables import S3_COLUMNS, _kind_rows, _s3_detail
from backupbench.runner.agents_merge import merge_phase
from backupbench.workloads.s3_options import S3Options
from backupbench.workloads.s3_phase import ObjectPlan

S3 = {"kind": "s3-run", "endpoint": "http://127.0.0.1:9000", "bucket": "bench", "prefix": "backupbench/r1/a/",
      "objects": 10, "object_size": 4096, "access_key": "a", "secret_key": "s", "seed": 7}


def _records(kinds: dict[str, list[int]], size: int = 100, errors: dict[str, int] | None = None) -> list[OpRecord]:
    """One successful request per latency (ns), started at 0, moving `size` bytes; a GET's
    first byte at half its latency; then `errors` failed requests of each kind."""
    records = [OpRecord(kind, key, 0, 0, lat // 2 if kind == "get" else -1, lat, size, 200)
               for kind, latencies in kinds.items() for key, lat in enumerate(latencies)]
    records += [OpRecord(kind, 99, 0, 0, -1, 1, 0, 503, "SlowDown") for kind, n in (errors or {}).items()
                for _ in range(n)]
    return records


def _agent_phase(records: list[OpRecord], started: float, multipart: float | None = None) -> dict:
    """What an agent sends back for its mixed phase, through the agent's own code."""
    figures = mixed_figures(records)
    if multipart is not None:
        figures["multipart_objects"] = multipart
    return _phase_result("mixed", PhaseRun("mixed", records, figures, {}, started_wall=started), started)


# Agent a: runtime 2.0 s (its last request ends at 2e9 ns), starts at wall 100.0.
A = _records({"put": [10, 20, 30, 40], "get": [5, 6], "list": [2_000_000_000]}, errors={"put": 1})
# Agent b: starts 0.5 s later, runtime 2.0 s: the common wall time is 2.5 s.
B = _records({"put": [50, 60], "get": [7, 8, 9, 1000], "delete": [2_000_000_000]})


def test_a_mixed_phase_from_two_agents_has_each_kinds_figures_merged():
    merged, hosts = merge_phase("mixed", {"a": _agent_phase(A, 100.0, 2), "b": _agent_phase(B, 100.5, 1)})
    wall = 2.5  # b's start offset 0.5 + its runtime 2.0
    assert merged["runtime"] == pytest.approx(wall)
    # PUT: 4 + 2 requests, 100 bytes each; one failed on a.
    assert (merged["put_ops"], merged["put_bytes"], merged["put_errors"]) == (6, 600, 1)
    assert merged["put_effective_bw"] == pytest.approx(600 / wall)
    assert merged["put_objects_per_s"] == pytest.approx(6 / wall)
    # Nearest rank of [10, 20, 30, 40, 50, 60]: p50 is the 3rd (30), p90 and p99 the 6th (60).
    assert (merged["put_lat_p50_ns"], merged["put_lat_p90_ns"], merged["put_lat_p99_ns"]) == (30, 60, 60)
    # GET: [5, 6, 7, 8, 9, 1000] together: p50 the 3rd (7), p99 the 6th (b's 1000), not a mean of the
    # agents' p99s ((6 + 1000) / 2); first bytes at half: p50 3 (7 // 2), p99 500.
    assert (merged["get_ops"], merged["get_bytes"]) == (6, 600)
    assert (merged["get_lat_p50_ns"], merged["get_lat_p99_ns"]) == (7, 1000)
    assert (merged["get_ttfb_p50_ns"], merged["get_ttfb_p99_ns"]) == (3, 500)
    # LIST only on a, DELETE only on b: one request each, still over the common wall time.
    assert (merged["list_ops"], merged["list_lat_p99_ns"]) == (1, 2_000_000_000)
    assert (merged["delete_ops"], merged["delete_objects_per_s"]) == (1, pytest.approx(1 / wall))
    # The phase as a whole: 4+2+1 + 2+4+1 requests, multipart objects 2 + 1.
    assert (merged["ops"], merged["errors"], merged["multipart_objects"]) == (14, 1, 3)
    assert hosts["b"]["get_lat_p99_ns"] == 1000 and hosts["a"]["get_lat_p99_ns"] == 6


def test_one_agent_gives_the_figures_of_a_mixed_phase_from_one_host():
    merged, _ = merge_phase("mixed", {"a": _agent_phase(A, 100.0)})
    assert {k: v for k, v in merged.items() if k != "hosts_reporting"} == pytest.approx(mixed_figures(A))


def test_the_merged_kinds_give_the_reports_rows_of_a_mixed_phase():
    merged, _ = merge_phase("mixed", {"a": _agent_phase(A, 100.0, 2), "b": _agent_phase(B, 100.5, 1)})
    op = OperationRecord(name="mixed", pattern="MIXED", status=COMPLETE, figures=merged)
    rows = _kind_rows(op, S3_COLUMNS)
    assert [(row.operation, row.pattern) for row in rows] == [
        ("  ↳ PUT", "43% of its requests"), ("  ↳ GET", "43% of its requests"),   # 6 / 14
        ("  ↳ LIST", "7% of its requests"), ("  ↳ DELETE", "7% of its requests")]  # 1 / 14
    assert _s3_detail(merged) == "put 6, get 6, list 1, delete 1, multipart 3"


def test_an_agent_is_asked_for_a_mixed_phase_with_the_runs_shares_and_multipart_settings():
    opts = S3Options.model_validate({"endpoint": "http://127.0.0.1:9000", "bucket": "bench", "objects": 10,
                                     "object_size": "6MiB", "multipart_threshold": "5MiB", "part_size": "5MiB",
                                     "s3_phases": "put,mixed", "mix": "put=60,get=30,list=10"})
    plan = opts.object_plan(7)
    request = parse_request(json.dumps({**S3, **plan.agent_fields(), "ops": ["mixed"], "resume": True}).encode())
    # The agent makes the same plan of the request: the loader gets the same shares and parts.
    assert ObjectPlan.for_agent(request).loader_config() == plan.loader_config()
    assert plan.loader_config()["mix"] == {"put": 60, "get": 30, "list": 10}


@pytest.mark.parametrize("bad, says", [({"ops": ["mixed"], "resume": True}, "mix"),
                                       ({"ops": ["mixed"], "resume": True, "mix": {"get": 0}}, "mix"),
                                       ({"mix": {"copy": 5}}, "mix"),
                                       ({"multipart_threshold": 6 << 20, "part_size": 4096}, "part_size")])
def test_an_s3_run_without_shares_for_its_mixed_phase_or_with_tiny_parts_is_refused(bad, says):
    with pytest.raises(ProtocolError, match=says):
        parse_request(json.dumps({**S3, **bad}).encode())
