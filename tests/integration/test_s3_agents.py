"""`backupbench run --workload s3 --agents`: a real MinIO in one network namespace, real agents
in two (or three) others, the real CLI in this one, all on one bridge this test makes.

Network: only 10.231.X.0/24 on the bridge and veths made here (X from the pid, 40-79).
Everything started or made here (MinIO, agents, namespaces, veths, bridge, files) is removed
in `finally` blocks; the last test checks the namespaces are gone.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from xml.etree import ElementTree

import pytest

from backupbench.journal import journal_dir
from backupbench.layouts.minio import find_minio
from backupbench.results.document import phase_figures
from s3_fixtures import S3Admin, require_s3_tools
from netns_support import BACKUPBENCH, Agent

X = 40 + os.getpid() % 40
NET = f"10.231.{X}"
TAG = f"bbs{os.getpid() % 100000}"
BUCKET = "agentsbench"
FRESH_BUCKET = "agentsfresh"
VERSIONING_ON = (b'<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                 b"<Status>Enabled</Status></VersioningConfiguration>")
MINIO_IP, AGENT_IPS = f"{NET}.2", (f"{NET}.3", f"{NET}.4", f"{NET}.5")
NAMESPACES = (f"{TAG}m", f"{TAG}a", f"{TAG}b", f"{TAG}c")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


def _ours() -> list[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=20).stdout
    return [line.split()[0] for line in listed.splitlines() if line.split() and line.split()[0] in NAMESPACES]


def _teardown_network() -> None:
    for i, _ in enumerate(NAMESPACES):
        subprocess.run(["ip", "link", "del", f"{TAG}{i}h"], capture_output=True, timeout=20)
    subprocess.run(["ip", "link", "del", f"{TAG}br"], capture_output=True, timeout=20)
    for ns in NAMESPACES:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)


def _network() -> None:
    """One bridge here (NET.1), one veth to each namespace (NET.2 for MinIO, .3-.5 for agents)."""
    _ip("link", "add", f"{TAG}br", "type", "bridge")
    _ip("addr", "add", f"{NET}.1/24", "dev", f"{TAG}br")
    _ip("link", "set", f"{TAG}br", "up")
    for i, ns in enumerate(NAMESPACES):
        host_end, ns_end = f"{TAG}{i}h", f"{TAG}{i}n"
        _ip("netns", "add", ns)
        _ip("link", "add", host_end, "type", "veth", "peer", "name", ns_end)
        _ip("link", "set", host_end, "master", f"{TAG}br")
        _ip("link", "set", host_end, "up")
        _ip("link", "set", ns_end, "netns", ns)
        _ip("-n", ns, "addr", "add", f"{NET}.{i + 2}/24", "dev", ns_end)
        _ip("-n", ns, "link", "set", ns_end, "up")
        _ip("-n", ns, "link", "set", "lo", "up")


def _wait_ready(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"MinIO ended: {log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"MinIO did not start: {log.read_text()}")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """(endpoint, admin, token file, base folder) with MinIO running in its namespace."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 for network namespaces")
    require_s3_tools()
    base = tmp_path_factory.mktemp("s3agents")
    token_file = base / "token"
    token_file.write_text(secrets.token_hex(32) + "\n")
    os.chmod(token_file, 0o600)
    user, password = "bb" + secrets.token_hex(6), secrets.token_hex(16)
    (base / "drive").mkdir()
    log = base / "minio.log"
    minio = None
    try:
        _network()
        env = {**os.environ, "MINIO_ROOT_USER": user, "MINIO_ROOT_PASSWORD": password, "MINIO_CI_CD": "1",
               "MINIO_BROWSER": "off"}
        with open(log, "wb") as out:
            minio = subprocess.Popen(["ip", "netns", "exec", NAMESPACES[0], str(find_minio()), "server", "--quiet",
                                      "--address", f"{MINIO_IP}:9000", "--console-address", f"{MINIO_IP}:9001",
                                      str(base / "drive")], env=env, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        endpoint = f"http://{MINIO_IP}:9000"
        _wait_ready(f"{endpoint}/minio/health/live", minio, log)
        admin = S3Admin(endpoint, user, password)
        admin.create_bucket(BUCKET)
        yield endpoint, admin, token_file, base
    finally:
        if minio is not None:
            minio.terminate()
            try:
                minio.wait(timeout=30)
            except subprocess.TimeoutExpired:
                minio.kill()
                minio.wait(timeout=10)
        _teardown_network()


def _agent(lab, index: int, token_file: Path | None = None) -> Agent:
    _, _, default_token, base = lab
    root = base / f"root{index}"
    root.mkdir(exist_ok=True)
    return Agent(["ip", "netns", "exec", NAMESPACES[index + 1]], f"{AGENT_IPS[index]}:7480",
                 token_file or default_token, root, base / f"agent{index}.log")


@contextlib.contextmanager
def _agents(lab, *token_files: Path | None):
    """Agents in namespaces 1.., one per token file (None: the right token); every one started
    is stopped on the way out, whatever happened. Yields them and their exit codes (filled
    in after the block)."""
    started: list[Agent] = []
    codes: list[int] = []
    try:
        for index, token_file in enumerate(token_files):
            started.append(_agent(lab, index, token_file))
        yield started, codes
    finally:
        codes += [agent.stop() for agent in started]


def _run(lab, agents: list[Agent], *extra: str, bucket: str = BUCKET) -> list[str]:
    endpoint, admin, token_file, base = lab
    return [BACKUPBENCH, "run", "--workload", "s3", "--endpoint", endpoint, "--bucket", bucket,
            "--agents", ",".join(a.address for a in agents), "--agent-token-file", str(token_file),
            *(arg for agent in agents for arg in agent.trust_args),   # each agent's certificate pinned
            "--results", str(base / "results"), "--json", "--quiet", *extra]


def _env(lab) -> dict[str, str]:
    admin = lab[1]
    return {**os.environ, "AWS_ACCESS_KEY_ID": admin.access_key, "AWS_SECRET_ACCESS_KEY": admin.secret_key}


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


@pytest.fixture(scope="module", autouse=True)
def _after_all():
    # Set up before the module's lab and torn down after it: the lab's namespaces must be gone.
    yield
    assert _ours() == [], "namespaces left behind"
