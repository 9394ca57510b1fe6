"""The pure parts of `run --workload s3 --agents`: parsing, prefixes, shares, merging, the
compact latencies, the keep/resume rules of s3-run, the options refused with agents; and,
with a fake engine and fake agents, what the controller journals and removes."""

from __future__ import annotations

import random

import pytest

from backupbench.agent.client import AgentUnreachable
from backupbench.agent.protocol import ProtocolError, pack_sorted, parse_request, unpack_sorted
from backupbench.engines.s3 import Probe
from backupbench.errors import EngineError, InputError, RefusedError
from backupbench.runner.agents import AgentsWorkload, agent_prefix, on_agents, parse_agents
from backupbench.runner.agents_merge import errors_by_kind, every_request_failed, merge_phase, split
from backupbench.stats import nearest_rank
from backupbench.workloads.s3 import S3Workload
from backupbench.workloads.s3_options import S3Options, run_prefix

S3 = {"kind": "s3-run", "endpoint": "http://127.0.0.1:9000", "bucket": "bench", "prefix": "backupbench/r1/a/",
      "objects": 10, "object_size": 4096, "access_key": "a", "secret_key": "s", "seed": 7}


def _parse(**changes):
    import json
    return parse_request(json.dumps({**S3, **changes}).encode())


def test_agents_are_parsed_and_labelled_by_address():
    refs = parse_agents(" 10.0.0.5:7480, 10.0.0.6:7481 ,[fd00::1]:7480")
    assert [r.label for r in refs] == ["10.0.0.5-7480", "10.0.0.6-7481", "fd00__1-7480"]
    assert agent_prefix("20260101T000000-ab12", refs[2].label) == "backupbench/20260101T000000-ab12/fd00__1-7480/"
    with pytest.raises(InputError, match="twice"):
        parse_agents("10.0.0.5:7480,10.0.0.5:7480")
    with pytest.raises(InputError):
        parse_agents("host-without-port")
    with pytest.raises(InputError, match="empty"):
        parse_agents(" , ")


def test_every_agents_prefix_is_below_the_runs_and_taken_by_the_agent():
    run_id = "20260101T000000-ab12"
    refs = parse_agents("10.0.0.5:7480,[::1]:7480,[::ffff:10.0.0.5]:7481,[fd00::1]:65535")
    assert refs[1].label == "0__1-7480"   # '::1' as '0::1': a key part starts with a letter or digit
    for ref in refs:
        prefix = agent_prefix(run_id, ref.label)
        assert prefix.startswith(run_prefix(run_id)) and prefix != run_prefix(run_id)
        assert _parse(prefix=prefix).prefix == prefix


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


def test_errors_of_every_agent_are_counted_by_kind_together():
    finished = {"a": {"errors": {"timeout": 2, "SlowDown": 1}}, "b": {"errors": {"timeout": 3}}, "c": {"errors": None}}
    assert errors_by_kind(finished) == {"timeout": 5, "SlowDown": 1}


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
                                           ({"s3_phases": "put,lock-check", "object_lock": "governance",
                                             "retention": "1d"}, "lock-check"),
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


# ---- what the controller journals and removes (fake engine, fake agents) --------------------

RUN_ID = "20260101T000000-ab12"


class _Engine:
    def __init__(self, events: list, prefix_empty: bool = True, delete_fails: bool = False):
        self.events, self.prefix_empty, self.delete_fails = events, prefix_empty, delete_fails

    def probe(self, target, creds, prefix="", object_lock=False) -> Probe:
        self.events.append(("probe", prefix))
        return Probe(bucket_exists=True, bucket_empty=False, prefix_empty=self.prefix_empty)

    def delete_prefix(self, target, creds, prefix, timeout=3600.0) -> int:
        self.events.append(("delete_prefix", prefix))
        if self.delete_fails:
            raise EngineError("connection refused")
        return 7


class _Agent:
    """An agent whose host went away as the job was sent: the run loses it."""

    def __init__(self, events: list):
        self.events = events

    def s3_run(self, **fields):
        self.events.append(("s3_run", fields["prefix"]))
        raise AgentUnreachable("agent gone")

    # The per-host monitor asks every agent for its samples during the run: it has none.
    def with_timeout(self, timeout):
        return self

    def monitor(self, since=0):
        return {"samples": [], "last": since, "dropped": 0, "devices": [], "disks": [], "interval_s": 1.0}


class _Hooks:
    def __init__(self, events: list):
        self.events = events

    def started(self, name, title, pattern, measured=True, warmup_s=0.0):
        self.events.append(("started", name))

    def progress(self, name, fraction, detail):
        pass

    def finished(self, name, figures, detail=None, failed=False):
        self.events.append(("finished", name))

    def will_create(self, artefact):
        self.events.append(("will_create", artefact["kind"], artefact["prefix"]))
        return 41

    def removed(self, artefact_id, how="removed"):
        self.events.append(("removed", artefact_id))


class _FakeAgentsWorkload(AgentsWorkload):
    def client(self, ref):
        # The engine's list holds every call (engine, agents, hooks) in the order made.
        return _Agent(self.inner.engine.events)


def _agents_workload(tmp_path, engine: _Engine) -> _FakeAgentsWorkload:
    inner = S3Workload(S3Options.model_validate({"endpoint": "http://127.0.0.1:9000", "bucket": "bench",
                                                 "objects": 10}),
                       engine=engine, environ={"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "s"},
                       home=tmp_path)
    return _FakeAgentsWorkload(inner, parse_agents("10.0.0.5:7480,10.0.0.6:7480"), "t" * 32)


def test_the_runs_prefix_is_journalled_once_before_any_agent_writes_and_removed_at_the_end(tmp_path):
    events = []
    workload = _agents_workload(tmp_path, _Engine(events))
    with pytest.raises(EngineError, match="no agent finished put"):
        workload.execute(None, tmp_path, RUN_ID, _Hooks(events))
    workload.cleanup(None, RUN_ID, _Hooks(events))
    run = f"backupbench/{RUN_ID}/"
    assert events[:3] == [("probe", run), ("will_create", "s3-objects", run), ("started", "put")]
    assert sorted(e for e in events if e[0] == "s3_run") == [("s3_run", f"{run}10.0.0.5-7480/"),
                                                            ("s3_run", f"{run}10.0.0.6-7480/")]
    assert [e for e in events if e[0] == "will_create"] == [("will_create", "s3-objects", run)]
    assert events[-2:] == [("delete_prefix", run), ("removed", 41)]
    assert set(workload.lost) == {"10.0.0.5-7480", "10.0.0.6-7480"}


def test_a_run_prefix_in_use_is_refused_before_anything_is_journalled_or_sent(tmp_path):
    events = []
    workload = _agents_workload(tmp_path, _Engine(events, prefix_empty=False))
    with pytest.raises(RefusedError, match="already holds objects"):
        workload.execute(None, tmp_path, RUN_ID, _Hooks(events))
    workload.cleanup(None, RUN_ID, _Hooks(events))
    assert events == [("probe", f"backupbench/{RUN_ID}/")]


def test_objects_that_could_not_be_deleted_stay_journalled_and_are_named_in_the_notes(tmp_path):
    events = []
    workload = _agents_workload(tmp_path, _Engine(events, delete_fails=True))
    with pytest.raises(EngineError):
        workload.execute(None, tmp_path, RUN_ID, _Hooks(events))
    workload.cleanup(None, RUN_ID, _Hooks(events))
    assert events[-1] == ("delete_prefix", f"backupbench/{RUN_ID}/")
    assert not any(e[0] == "removed" for e in events)
    assert any(f"backupbench/{RUN_ID}/" in note and "bench" in note for note in workload.notes)


@pytest.mark.parametrize("ops, errors, failed", [(0, 12, True), (3, 12, False), (0, 0, False), (40, 0, False)])
def test_a_phase_from_agents_fails_when_no_request_succeeded(ops, errors, failed):
    # Merged over the agents, as merge_phase sums them: stored `failed`, not `complete` at 0 B/s.
    assert every_request_failed({"ops": float(ops), "errors": float(errors)}) is failed
