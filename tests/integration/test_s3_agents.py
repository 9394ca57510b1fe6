"""`backupbench run --workload s3 --agents`: a real MinIO in one network namespace, real agents
in two (or three) others, the real CLI in this one, all on one bridge this test makes.

Network: only 10.231.X.0/24 on the bridge and veths made here (tests/s3_agents_support.py's
lab, on netns_support's Hosts). Everything started or made here (MinIO, agents, namespaces,
veths, bridge, files) is removed in `finally` blocks; the lab's teardown checks the namespaces
are gone.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import signal
import sqlite3
import subprocess
import time
from contextlib import closing
from xml.etree import ElementTree

import pytest

from backupbench.journal import journal_dir
from backupbench.results.document import phase_figures
from netns_support import BACKUPBENCH
from s3_agents_support import BUCKET
from s3_agents_support import agents as _agents
from s3_agents_support import run_argv as _run
from s3_agents_support import run_env as _env
from s3_fixtures import S3Admin

FRESH_BUCKET = "agentsfresh"
VERSIONING_ON = (b'<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                 b"<Status>Enabled</Status></VersioningConfiguration>")


@pytest.fixture(scope="module")
def lab(s3_agents_lab):
    return s3_agents_lab


def _ops(document: dict) -> dict[str, dict]:
    """The run document's phases by name, each with its figures by name."""
    return {op["name"]: {**op, "figures": phase_figures(op)} for op in document["phases"]}


def test_two_agents_give_one_merged_result_and_leave_no_object(lab):
    journals = journal_dir(lab[3] / "results")
    closed_before = set(journals.glob("*.closed.jsonl"))
    with _agents(lab, None, None) as (agents, codes):
        done = subprocess.run(_run(lab, agents, "--objects", "400", "--object-size", "64KiB", "--concurrency", "8",
                                   "--s3-phases", "put,get,delete"),
                              env=_env(lab), capture_output=True, text=True, timeout=600)
    assert codes == [0, 0], [a.log.read_text() for a in agents]
    assert done.returncode == 0, done.stderr
    ops = _ops(json.loads(done.stdout))
    assert set(ops) == {"put", "get", "delete"}
    for name, op in ops.items():
        hosts = op["detail"]["hosts"]
        assert len(hosts) == 2 and op["detail"]["lost_hosts"] == {}
        assert op["figures"]["ops"] == sum(h["ops"] for h in hosts.values()) == 400, name
        assert op["figures"]["errors"] == 0
        p99s = [h["lat_p99_ns"] for h in hosts.values()]
        assert min(p99s) <= op["figures"]["lat_p99_ns"] <= max(p99s)
        assert op["figures"]["objects_per_s"] > 0 and op["figures"]["runtime"] > 0
    assert ops["get"]["figures"]["bytes"] == 400 * 65536
    assert lab[1].keys(BUCKET) == []
    assert lab[1].secret_key not in done.stdout + done.stderr
    # One journal entry for the run's prefix, removed by the run itself (not left to the sweep).
    [journal] = set(journals.glob("*.closed.jsonl")) - closed_before
    run_id = journal.name.removesuffix(".closed.jsonl")
    entries = [json.loads(line) for line in journal.read_text().splitlines()]
    created = [e for e in entries if e["event"] == "create"]
    assert [e["artefact"]["prefix"] for e in created] == [f"backupbench/{run_id}/"]
    assert [e["how"] for e in entries if e["event"] == "removed"] == ["removed (0 left by the agents deleted here)"]


def _stored(lab, run_id: str, *command: str) -> str:
    """A stored run's output through the CLI (show, export, report), as a user reads it again."""
    done = subprocess.run([BACKUPBENCH, "--debug", *command, run_id, "--results", str(lab[3] / "results")],
                          env={**_env(lab), "COLUMNS": "240"}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_mixed_phase_from_two_agents_has_each_request_kinds_figures_in_every_output(lab):
    """As a mixed phase from one host: a row per request kind (its own ops, bytes, p50/p99) and
    how many objects went up as multipart, in the stored figures, terminal, CSV, Prometheus, HTML."""
    with _agents(lab, None, None) as (agents, codes):
        done = subprocess.run(_run(lab, agents, "--objects", "40", "--object-size", "6MiB", "--concurrency", "4",
                                   "--multipart-threshold", "5MiB", "--part-size", "5MiB",
                                   "--s3-phases", "put,mixed,delete", "--mix", "put=40,get=40,list=10,delete=10"),
                              env=_env(lab), capture_output=True, text=True, timeout=600)
    assert codes == [0, 0], [a.log.read_text() for a in agents]
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    mixed = _ops(document)["mixed"]
    figures, hosts = mixed["figures"], mixed["detail"]["hosts"]
    assert len(hosts) == 2 and mixed["status"] == "complete"
    kinds = [kind for kind in ("put", "get", "list", "delete") if figures.get(f"{kind}_ops")]
    assert {"put", "get"} <= set(kinds)
    for kind in kinds:
        # Counts and bytes summed over the agents; percentiles of both agents' requests together.
        assert figures[f"{kind}_ops"] == sum(h.get(f"{kind}_ops", 0) for h in hosts.values()), kind
        assert figures[f"{kind}_bytes"] == sum(h.get(f"{kind}_bytes", 0) for h in hosts.values()), kind
        p99s = [h[f"{kind}_lat_p99_ns"] for h in hosts.values() if h.get(f"{kind}_ops")]
        assert min(p99s) <= figures[f"{kind}_lat_p99_ns"] <= max(p99s), kind
        assert 0 < figures[f"{kind}_lat_p50_ns"] <= figures[f"{kind}_lat_p99_ns"], kind
    assert figures["ops"] == sum(figures[f"{kind}_ops"] for kind in kinds) == 40
    # Its latency picture per kind: both agents' requests together, as the figures are.
    pictures = {k["kind"]: k for k in mixed["latency"]["kinds"]}
    assert mixed["latency"]["hosts"] == 2 and set(pictures) == set(kinds)
    for kind in kinds:
        picture = pictures[kind]
        assert picture["count"] == figures[f"{kind}_ops"] and picture["p99"] == figures[f"{kind}_lat_p99_ns"]
        assert sum(second[1] for second in picture["over_time"][0]["seconds"]) == picture["count"]
    assert figures["get_bytes"] == figures["get_ops"] * 6 * 1024 * 1024
    # Every 6 MiB PUT is over the 5 MiB threshold: each went up as multipart, on both agents.
    assert figures["multipart_objects"] == figures["put_ops"] == sum(h["multipart_objects"] for h in hosts.values())
    assert _ops(document)["put"]["figures"]["multipart_objects"] == 40
    assert lab[1].keys(BUCKET) == []

    run_id = document["run"]["id"]
    terminal = _stored(lab, run_id, "show")
    for kind in kinds:
        assert re.search(rf"↳ {kind.upper()}\s+│\s+\d+% of its requests", terminal), terminal
    assert f"{40 + figures['multipart_objects']:,.0f} objects went up as multipart" in terminal
    csv_text = _stored(lab, run_id, "show", "--csv")
    assert all(f"{kind}_lat_p99_ns" in csv_text for kind in kinds)
    prometheus = _stored(lab, run_id, "export", "--prometheus")
    assert all(re.search(rf'backupbench_lat_p99_seconds{{[^}}]*op="{kind}"', prometheus) for kind in kinds)
    page = lab[3] / f"report-{run_id}.html"
    _stored(lab, run_id, "report", "--html", str(page))
    assert all(f"<td>  ↳ {kind.upper()}</td>" in page.read_text() for kind in kinds)
    assert page.read_text().count('aria-label="Latency of') == 3  # put, mixed, delete


def _versions(admin: S3Admin, bucket: str) -> list[tuple[str, str, bool]]:
    """Every version and delete marker in `bucket`: (key, version id, is a delete marker)."""
    found, marker = [], {}
    while True:
        status, body = admin.request("GET", bucket, query={"versions": "", **marker})
        assert status == 200, body
        root = ElementTree.fromstring(body)
        ns = root.tag.partition("}")[0] + "}"
        for element in root:
            if element.tag in (f"{ns}Version", f"{ns}DeleteMarker"):
                found.append((element.findtext(f"{ns}Key"), element.findtext(f"{ns}VersionId"),
                              element.tag == f"{ns}DeleteMarker"))
        if root.findtext(f"{ns}IsTruncated") != "true":
            return found
        marker = {"key-marker": root.findtext(f"{ns}NextKeyMarker") or "",
                  "version-id-marker": root.findtext(f"{ns}NextVersionIdMarker") or ""}


@contextlib.contextmanager
def _versioned_bucket(admin: S3Admin, bucket: str):
    """A bucket of this test's that keeps every version: a run's objects stay readable after the
    run deleted them. Every version and the bucket are removed on the way out."""
    admin.create_bucket(bucket)
    try:
        status, body = admin.request("PUT", bucket, query={"versioning": ""}, body=VERSIONING_ON)
        assert status == 200, body
        yield
    finally:
        for key, version, _ in _versions(admin, bucket):
            admin.request("DELETE", bucket, key, query={"versionId": version})
        admin.request("DELETE", bucket)


def test_every_agent_and_every_run_writes_bytes_of_its_own(lab):
    """Incompressible data from agents is fresh per agent and per run: no 4 KiB block of any
    object is found in another object, of another agent or of another run (a deduplicating
    target would otherwise store the second agent's and the second run's data for free)."""
    admin = lab[1]
    with _versioned_bucket(admin, FRESH_BUCKET), _agents(lab, None, None) as (agents, codes):
        for _ in range(2):
            done = subprocess.run(_run(lab, agents, "--objects", "24", "--object-size", "64KiB", "--concurrency",
                                       "4", "--s3-phases", "put", bucket=FRESH_BUCKET),
                                  env=_env(lab), capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr
        assert admin.keys(FRESH_BUCKET) == []  # each run deleted its objects; their versions stay
        objects = [(key, version) for key, version, marker in _versions(admin, FRESH_BUCKET) if not marker]
        owners: dict[bytes, set[tuple[str, str]]] = {}
        blocks = 0
        for key, version in objects:
            _, run_id, label, _ = key.split("/")
            status, data = admin.request("GET", FRESH_BUCKET, key, query={"versionId": version})
            assert status == 200 and len(data) == 64 * 1024, (key, status)
            for offset in range(0, len(data), 4096):
                owners.setdefault(hashlib.sha256(data[offset:offset + 4096]).digest(), set()).add((run_id, label))
                blocks += 1
    assert codes == [0, 0]
    groups = {(key.split("/")[1], key.split("/")[2]) for key, _ in objects}
    assert len(groups) == 4 and len(objects) == 2 * 24  # 2 runs x 2 agents, 12 objects each
    assert blocks == 48 * 16 and len(owners) == blocks, "a 4 KiB block was written twice"
    assert all(len(found) == 1 for found in owners.values())


def test_an_agent_with_a_wrong_token_is_refused_by_name(lab):
    wrong = lab[3] / "wrong-token"
    wrong.write_text(secrets.token_hex(32) + "\n")
    os.chmod(wrong, 0o600)
    with _agents(lab, None, wrong) as (agents, _):
        done = subprocess.run(_run(lab, agents, "--objects", "20", "--object-size", "4KiB"),
                              env=_env(lab), capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and agents[1].address in lines[0] and "token" in lines[0], done.stderr
    assert lab[1].keys(BUCKET) == []


def _wait_for_objects(admin: S3Admin, label: str, controller: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and controller.poll() is None:
        if any(f"/{label}/" in key for key in admin.keys(BUCKET, "backupbench/")):
            return
        time.sleep(0.2)
    raise AssertionError("the agent wrote no object")


def test_an_agent_killed_mid_phase_is_marked_lost_and_the_run_completes(lab):
    controller = None
    with _agents(lab, None, None) as (agents, _):
        victim = agents[1]
        label = victim.address.replace(":", "-")
        try:
            controller = subprocess.Popen(_run(lab, agents, "--objects", "6000", "--object-size", "256KiB",
                                               "--concurrency", "2"),
                                          env=_env(lab), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            _wait_for_objects(lab[1], label, controller)
            victim.proc.send_signal(signal.SIGKILL)
            out, err = controller.communicate(timeout=600)
        finally:
            if controller is not None and controller.poll() is None:
                controller.kill()
                controller.wait(timeout=30)
    assert controller.returncode == 0, err
    record = json.loads(out)
    ops = _ops(record)
    assert label in ops["put"]["detail"]["lost_hosts"]
    assert list(ops["get"]["detail"]["hosts"]) == [agents[0].address.replace(":", "-")]
    assert ops["get"]["figures"]["ops"] == ops["get"]["detail"]["hosts"][agents[0].address.replace(":", "-")]["ops"]
    assert any(victim.address in note and "lost" in note for note in record["run"]["notes"])
    assert lab[1].keys(BUCKET) == []   # the lost agent's objects were deleted by the controller


def test_ctrl_c_stops_every_agent_and_removes_every_object(lab):
    controller = None
    with _agents(lab, None, None) as (agents, codes):
        try:
            controller = subprocess.Popen(_run(lab, agents, "--objects", "6000", "--object-size", "256KiB",
                                               "--concurrency", "2"),
                                          env=_env(lab), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for agent in agents:
                _wait_for_objects(lab[1], agent.address.replace(":", "-"), controller)
            controller.send_signal(signal.SIGINT)
            out, err = controller.communicate(timeout=300)
        finally:
            if controller is not None and controller.poll() is None:
                controller.kill()
                controller.wait(timeout=30)
        # The agents' jobs were stopped: each takes a new job at once (it would be refused as busy).
        for agent in agents:
            client = agent.client(lab[2])
            job = client.smallfiles_run(run_id="after", subfolder="after", files=5, file_size=10)
            assert client.wait(job["job_id"], timeout=60)["state"] == "done"
    assert controller.returncode == 130, err
    assert codes == [0, 0]
    assert lab[1].keys(BUCKET) == []


def test_repeat_two_from_two_agents_keeps_each_samples_agents_and_judges_them_over_the_samples(lab):
    """`run --workload s3 --agents A,B --repeat 2`: each phase stored with 2 samples (the
    document's `samples`, the store's samples table), the total shown as the median with its
    interval, each agent's figure the median of its 2 samples, the hosts' verdict over both
    samples, and each sample's per-host monitor CSV found by the report."""
    with _agents(lab, None, None) as (agents, codes):
        done = subprocess.run(_run(lab, agents, "--objects", "60", "--object-size", "64KiB", "--concurrency", "4",
                                   "--s3-phases", "put,get,delete", "--repeat", "2"),
                              env=_env(lab), capture_output=True, text=True, timeout=600)
    assert codes == [0, 0], [a.log.read_text() for a in agents]
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    run_id = document["run"]["id"]
    assert document["run"]["settings"]["repeat"] == 2
    for name, op in _ops(document).items():
        raw = next(f for f in next(p for p in document["phases"] if p["name"] == name)["figures"]
                   if f["name"] == "objects_per_s")
        assert len(raw["samples"]) == 2, name
        assert raw["value"] == pytest.approx(sum(raw["samples"]) / 2), name
        assert raw["interval"]["low"] <= raw["value"] <= raw["interval"]["high"], name
        detail = op["detail"]
        assert len(detail["host_samples"]) == 2 and all(len(s) == 2 for s in detail["host_samples"]), name
        assert set(detail["hosts"]) == set(detail["host_samples"][0]) and detail["lost_hosts"] == {}
        for host in detail["hosts"]:
            own = [sample[host]["objects_per_s"] for sample in detail["host_samples"]]
            assert detail["hosts"][host]["objects_per_s"] == pytest.approx(sum(own) / 2), (name, host)
        # Every sample moved every object once: each sample's agents' ops add up to 60.
        assert [sum(h["ops"] for h in s.values()) for s in detail["host_samples"]] == [60, 60], name
        csvs = [where["csv"] for where in detail["host_timeline"]["hosts"].values()]
        assert csvs and all(csv.startswith("sample-2/") for csv in csvs), csvs
    assert lab[1].keys(BUCKET) == []
    with closing(sqlite3.connect(lab[3] / "results" / "results.db")) as db:
        stored = set(db.execute("SELECT operation, sample FROM samples WHERE run_id = ? AND name = 'objects_per_s'",
                                (run_id,)))
    assert stored == {(op, n) for op in ("put", "get", "delete") for n in (1, 2)}
    flat = " ".join(_stored(lab, run_id, "show").split())
    assert "each host: the median of its 2 samples, judged over all of them" in flat
    assert "two hosts cannot name an outlier" in flat and "on one sample" not in flat
    page = lab[3] / f"report-{run_id}.html"
    _stored(lab, run_id, "report", "--html", str(page))
    html = page.read_text()
    # Each total's median beside its samples' interval (a cell of its own in HTML; the terminal
    # wraps it), a DELETE's in objects/s (its bytes are 0).
    spreads = re.findall(r"<td[^>]*>(?:<[^>]+>)*2: ([\d,.]+)–([\d,.]+)(?: log| min-max)?, CV", html)
    assert len(spreads) == 3 and ("0.0", "0.0") not in spreads, spreads
    assert "Per-host timelines" in html and "not readable" not in html
