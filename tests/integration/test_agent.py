"""`backupbench agent` as a real process: on 127.0.0.1, and inside a network namespace this
test makes (netns_support's, on a bridge 10.231.X.0/24), called over real sockets and TLS (a
self-signed certificate each agent is started with, pinned by fingerprint) with the real client.

Network: only 127.0.0.1 and the namespace's own address. Everything started or made here
(agents, namespace, veth pair, bridge, folders, S3 objects) is removed in `finally` blocks.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time

import pytest

from backupbench.agent.client import AgentAuthError, AgentClient, AgentJobFailed, AgentRefused
from backupbench.runner.agents_merge import merge_phase
from netns_support import Agent
from s3_fixtures import S3Admin, require_s3_tools
@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    base = tmp_path_factory.mktemp("agent")
    token = secrets.token_hex(32)
    token_file = base / "token"
    token_file.write_text(token + "\n")
    os.chmod(token_file, 0o600)
    root = base / "root"
    root.mkdir()
    return base, token, token_file, root


@pytest.fixture(scope="module")
def local(setup):
    base, token, token_file, root = setup
    agent = Agent([], "127.0.0.1:0", token_file, root, base / "local.log")
    try:
        yield agent, agent.client(token, timeout=10), root
    finally:
        assert agent.stop() == 0, agent.log.read_text()


@pytest.fixture
def namespace(netns):
    """Namespace 1 of netns_support's Hosts: (the prefix that runs a command in it, the agent's address)."""
    return netns.exec_prefix(1), netns.make(1)


def _raw(client: AgentClient, method: str, path: str, body: bytes = b"", headers: dict | None = None) -> int:
    conn = client.trust.connection(client.host, client.port, timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_a_wrong_or_missing_token_gets_401_and_runs_nothing(local, setup):
    agent, client, root = local
    wrong = agent.client("x" * 64)
    status, answer = wrong.call("smallfiles-run", run_id="w1", subfolder="w", files=50, file_size=100)
    assert status == 401 and "token" in answer["error"]
    with pytest.raises(AgentAuthError):
        wrong.hello()
    assert _raw(client, "POST", "/v1", b'{"kind": "hello", "version": "1"}') == 401
    assert _raw(client, "POST", "/v1", b'{"kind": "hello", "version": "1"}',
                {"Authorization": f"Basic {setup[1]}"}) == 401
    assert list(root.iterdir()) == []
    assert client.hello()["agent"] == "backupbench"


def test_anything_but_the_documented_requests_is_refused(local):
    agent, client, root = local
    for kind, fields in (("exec", {"argv": ["id"]}), ("shell", {}), ("hello", {"version": "1", "cmd": "id"}),
                         ("s3-run", {"endpoint": "http://127.0.0.1:1", "bucket": "abc", "prefix": "/", "objects": 1,
                                     "object_size": 1, "access_key": "a", "secret_key": "b"})):
        status, answer = client.call(kind, **fields)
        assert status == 400 and "\n" not in answer["error"], answer
    with pytest.raises(AgentRefused):
        client.request("exec", argv=["id"])
    auth = {"Authorization": f"Bearer {client._token}"}
    assert _raw(client, "GET", "/v1", headers=auth) == 405
    assert _raw(client, "POST", "/v1/../etc", b"{}", auth) == 404
    assert _raw(client, "POST", "/v1", b"", {**auth, "Content-Length": str(10 * 2**20)}) == 413
    assert list(root.iterdir()) == []


def test_a_path_outside_the_root_is_refused(local, tmp_path):
    agent, client, root = local
    (root / "escape").symlink_to(tmp_path)
    try:
        for subfolder in ("../outside", "/tmp", "escape", "escape/deeper"):
            status, answer = client.call("smallfiles-run", run_id="p1", subfolder=subfolder, files=5, file_size=10)
            assert status == 400 and "subfolder" in answer["error"], (subfolder, answer)
        assert list(tmp_path.iterdir()) == []
    finally:
        (root / "escape").unlink()
    assert list(root.iterdir()) == []


def _samples(client: AgentClient, at_least: int) -> dict:
    for _ in range(60):  # bounded: the first samples come within a few seconds
        answer = client.monitor(since=0)
        if len(answer["samples"]) >= at_least:
            return answer
        time.sleep(0.5)
    raise AssertionError(f"fewer than {at_least} samples: {answer}")


def _check_samples(answer: dict) -> None:
    samples = answer["samples"]
    assert [s["seq"] for s in samples] == sorted(s["seq"] for s in samples)
    assert answer["interval_s"] == 1.0 and answer["devices"]
    for sample in samples:
        assert sample["interval_s"] > 0
        assert sum(sample["cpu"].values()) == pytest.approx(100.0, abs=0.5)
        assert sample["load"]["load1"] >= 0 and sample["memory"]["total_kib"] > 0
        assert set(sample["disks"]) <= set(answer["devices"]) and sample["disks"]
        for rates in sample["disks"].values():
            assert {"r_s", "w_s", "rMB_s", "wMB_s", "util", "aqu_sz"} <= set(rates)


def test_monitor_serves_the_hosts_samples_since_a_number(local):
    agent, client, root = local
    answer = _samples(client, 2)
    _check_samples(answer)
    later = client.monitor(since=answer["samples"][-1]["seq"])
    assert all(s["seq"] > answer["samples"][-1]["seq"] for s in later["samples"])


def test_smallfiles_run_completes_and_leaves_nothing(local):
    agent, client, root = local
    job = client.smallfiles_run(run_id="sf1", subfolder="jobs/one", files=50, file_size=4096, folders=4,
                                patterns=[0xAA, 0x55], verify=True)
    done = client.wait(job["job_id"], timeout=120)
    phases = {p["name"]: p for p in done["result"]["phases"]}
    assert set(phases) == {"create", "update-1", "verify"}
    assert phases["create"]["files"] == 50 and phases["create"]["files_per_s"] > 0
    assert phases["verify"]["mismatches"] == 0
    assert list(root.iterdir()) == []


def test_a_stop_request_stops_the_job_and_cleans_up(local):
    agent, client, root = local
    job = client.smallfiles_run(run_id="sf2", subfolder="long", files=2_000_000, file_size=1, folders=100,
                                patterns=[1, 2, 3, 4, 5, 6, 7, 8], flush="fsync")
    for _ in range(100):   # bounded: until the engine has started
        if client.status(job["job_id"])["phase"]:
            break
        time.sleep(0.1)
    with pytest.raises(AgentRefused, match="running"):
        client.smallfiles_run(run_id="sf3", subfolder="other", files=5, file_size=1)
    client.stop(job["job_id"])
    with pytest.raises(AgentJobFailed) as failed:
        client.wait(job["job_id"], timeout=120)
    assert failed.value.job["state"] == "stopped"
    assert list(root.iterdir()) == []


def test_s3_run_puts_and_gets_objects_and_removes_them(local, request):
    require_s3_tools()
    server = request.getfixturevalue("minio_single")
    agent, client, root = local
    admin = S3Admin.of(server)
    admin.create_bucket("agentbench")
    try:
        job = client.s3_run(endpoint=server.endpoint, bucket="agentbench", prefix="backupbench/agent-t1/",
                            ops=["put", "get"], objects=40, object_size=8192, concurrency=4,
                            access_key=server.access_key, secret_key=server.secret_key, request_timeout=30.0,
                            seed=7)
        done = client.wait(job["job_id"], timeout=300)
        phases = {p["op"]: p["figures"] for p in done["result"]["phases"]}
        assert phases["put"]["ops"] == 40 and phases["get"]["ops"] == 40
        assert phases["put"]["errors"] == 0 and phases["get"]["bytes"] == 40 * 8192
        assert done["result"]["removed"] == 40 and admin.keys("agentbench") == []
        get = next(p for p in done["result"]["phases"] if p["op"] == "get")
        merged, per_host = merge_phase("get", {"a": get, "b": get})
        assert merged["ops"] == 80 and merged["bytes"] == 2 * 40 * 8192 and set(per_host) == {"a", "b"}
    finally:
        admin.delete_bucket("agentbench")
    assert server.secret_key not in agent.log.read_text()


def test_sigterm_stops_a_running_job_cleanly(setup, tmp_path):
    base, token, token_file, _ = setup
    root = tmp_path / "root"
    root.mkdir()
    agent = Agent([], "127.0.0.1:0", token_file, root, tmp_path / "agent.log")
    try:
        client = agent.client(token)
        job = client.smallfiles_run(run_id="sig1", subfolder="s", files=2_000_000, file_size=1, folders=100,
                                    patterns=[1, 2, 3, 4, 5, 6, 7, 8], flush="fsync")
        for _ in range(100):
            if client.status(job["job_id"])["phase"]:
                break
            time.sleep(0.1)
    finally:
        code = agent.stop(signal.SIGTERM)
    assert code == 0, agent.log.read_text()
    assert "stopped (SIGTERM)" in agent.rest
    assert list(root.iterdir()) == []


def test_an_agent_in_a_namespace_serves_only_its_address(namespace, setup, tmp_path):
    base, token, token_file, _ = setup
    root = tmp_path / "root"
    root.mkdir()
    prefix, address = namespace
    agent = Agent(prefix, f"{address}:0", token_file, root, tmp_path / "ns.log")
    try:
        assert agent.address.startswith(address + ":")
        client = agent.client(token)
        assert client.hello()["root"] == str(root)
        _check_samples(_samples(client, 2))
        with pytest.raises(AgentAuthError):
            agent.client("y" * 64).hello()
        # Bound only to the address given: inside its namespace, 127.0.0.1 at that port is closed.
        port = agent.address.rsplit(":", 1)[1]
        probe = subprocess.run([*prefix, sys.executable, "-c",
                                "import socket,sys; s=socket.socket(); s.settimeout(5)\n"
                                f"sys.exit(s.connect_ex(('127.0.0.1', {port})) == 0)"],
                               capture_output=True, timeout=30)
        assert probe.returncode == 0, probe.stderr
        job = client.smallfiles_run(run_id="ns1", subfolder="n", files=50, file_size=512)
        assert client.wait(job["job_id"], timeout=120)["result"]["phases"][0]["files"] == 50
    finally:
        assert agent.stop() == 0, agent.log.read_text()
    assert list(root.iterdir()) == []


def test_a_command_in_a_test_namespace_shares_this_mount_namespace_so_an_umount_here_frees_the_device(namespace):
    """netns_support enters the network namespace only: `ip netns exec` gave each server and
    agent a copy of every mount at its start, and another test's filesystem stayed mounted in
    it after that test's umount, so its wipefs failed with EBUSY."""
    prefix, _address = namespace
    inside = subprocess.run([*prefix, "readlink", "/proc/self/ns/mnt", "/proc/self/ns/net"],
                            capture_output=True, text=True, timeout=30, check=True).stdout.split()
    here = [os.readlink("/proc/self/ns/mnt"), os.readlink("/proc/self/ns/net")]
    assert inside[0] == here[0] and inside[1] != here[1], (inside, here)
