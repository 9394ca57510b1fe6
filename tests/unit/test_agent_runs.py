"""An agent's s3-run job (agent/runs.py) with a fake engine: which objects each phase works on,
what they hold, and which moment its phase counts from, must be those of the same run from one
host, with the seed the controller sent."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from backupbench.agent.jobs import Control, Job
from backupbench.agent.protocol import parse_request
from backupbench.agent.runs import run_s3
from backupbench.engines.s3 import PhaseRun, PhaseSpec, Probe, _start_wall
from backupbench.engines.s3_records import OpRecord, phase_figures
from backupbench.runner.agents_merge import merge_phase
from backupbench.workloads.s3 import S3Workload
from backupbench.workloads.s3_options import S3Options
from backupbench.workloads.s3_phase import content_seed

PREFIX = "backupbench/r1/a/"
FAILED_PUTS = {3, 7}
SEED = content_seed("r1", "a")


def _request(**changes):
    fields = {"kind": "s3-run", "endpoint": "http://127.0.0.1:9000", "bucket": "bench", "prefix": PREFIX,
              "objects": 10, "object_size": 4096, "access_key": "a", "secret_key": "s", "seed": SEED, **changes}
    return parse_request(json.dumps(fields).encode())


class _Engine:
    """PUTs of objects 3 and 7 fail (e.g. XMinioStorageFull); each phase's loader starts timing
    `launch_s` after it is asked to."""

    def __init__(self, launch_s: float = 0.0):
        self.specs: list[PhaseSpec] = []
        self.launch_s = launch_s

    def probe(self, target, creds, prefix="", object_lock=False) -> Probe:
        return Probe(bucket_exists=True, bucket_empty=False, prefix_empty=True)

    def run_phase(self, target, creds, spec: PhaseSpec, folder: Path, on_progress) -> PhaseRun:
        started = time.time() + self.launch_s
        self.specs.append(spec)
        keys = [k for k in range(spec.objects) if k not in spec.skip]
        records = [OpRecord(spec.op, k, 0, 10 * k, -1, 10 * k + 5, 0, 200 if ok else 507, "" if ok else "Full")
                   for k in keys for ok in [spec.op != "put" or k not in FAILED_PUTS]]
        return PhaseRun(spec.op, records, phase_figures(records, spec.op), {}, started_wall=started)

    def delete_prefix(self, target, creds, prefix, timeout=3600.0) -> int:
        return 0

    # What the run from one host asks of its engine besides.
    def argv(self, config_path: Path) -> list[str]:
        return ["s3load", str(config_path)]

    def create_bucket(self, target, creds, object_lock=False) -> bool:
        return False


class _Hooks:
    def started(self, name, title, pattern, measured=True): ...
    def progress(self, name, fraction, detail): ...
    def finished(self, name, figures, detail=None): ...
    def will_create(self, artefact): return 1
    def removed(self, artefact_id, how="removed"): ...


def _job(request, engine) -> dict:
    return run_s3(request, Control(Job("j", "s3-run", time.time())), engine)


def _phase_specs(engine: _Engine) -> dict[str, PhaseSpec]:
    """put, then get and delete in resumed jobs, as the controller splits them."""
    _job(_request(ops=["put"], keep=True, keep_s=30), engine)
    _job(_request(ops=["get"], keep=True, keep_s=30, resume=True), engine)
    _job(_request(ops=["delete"], resume=True), engine)
    return {spec.op: spec for spec in engine.specs}


def test_get_reads_what_put_stored_and_delete_removes_what_put_tried_as_from_one_host(tmp_path):
    specs = _phase_specs(_Engine())
    assert (specs["get"].objects, specs["get"].skip) == (10, (3, 7))
    # A failed PUT may have stored its object: DELETE tries all 10, as workloads/s3.py does.
    assert (specs["delete"].objects, specs["delete"].skip) == (10, ())
    # The run from this host, through the same fake engine (the same failed PUTs), asks the same.
    engine = _Engine()
    single = S3Workload(S3Options.model_validate({"endpoint": "http://127.0.0.1:9000", "bucket": "bench",
                                                  "objects": 10, "object_size": 4096, "access_key": "a",
                                                  "secret_key": "s"}), engine=engine)
    single.execute(None, tmp_path, "r1", _Hooks())
    mine = {spec.op: spec for spec in engine.specs}
    assert set(mine) == set(specs) == {"put", "get", "delete"}
    shared = ("objects", "skip", "object_size", "duration_s", "data", "compress", "dedupe", "pattern",
              "object_size_max")
    for op, spec in specs.items():
        assert {k: spec.config()[k] for k in shared} == {k: mine[op].config()[k] for k in shared}, op
        # Only the bytes differ: the agent's from the seed sent for it, the host's from the run's own.
        assert spec.config()["seed"] == SEED != mine[op].config()["seed"] == content_seed("r1")


def test_a_phase_counts_from_the_loaders_own_start_not_from_before_its_process_started():
    result = _job(_request(ops=["put"]), _Engine(launch_s=0.25))
    phase = result["phases"][0]
    assert phase["launch_s"] >= 0.2
    # Two agents whose loaders began timing at the same moment, one launched 0.3 s earlier:
    # the merged wall is the phases' own runtime, not runtime + the launch difference.
    a = {**phase, "started_wall": 100.0, "launch_s": 0.4}
    b = {**phase, "started_wall": 100.0, "launch_s": 0.1}
    merged, hosts = merge_phase("put", {"a": a, "b": b})
    assert merged["runtime"] == phase["figures"]["runtime"]
    assert hosts["a"]["start_offset_s"] == 0.0 and hosts["a"]["launch_s"] == 0.4


def test_the_loaders_start_is_read_from_its_done_event():
    assert _start_wall({"event": "done", "start_unix_ns": 1_700_000_000_250_000_000}) == pytest.approx(1_700_000_000.25)
    assert _start_wall({"event": "done"}) is None and _start_wall({"start_unix_ns": "x"}) is None
