"""`backupbench run --hosts` for real: two fio servers, each in a network namespace of its own
on a bridge this test makes (10.231.X.1 here, 10.231.X.N+1 there), no mocks.

Traffic goes only to the addresses inside the namespaces this test makes. The namespaces share
this machine's mount namespace, so both servers see the test's directory: each host writes its
own file there (as hosts sharing one NFS repository would), and the directory must be empty at
the end. Every namespace, veth pair and server is removed by the fixture, even on failure.

The IPv6 test needs no namespace (nor root): two fio servers on ::1, on ports this test picks.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import time
from contextlib import closing
from pathlib import Path

import pytest

from backupbench.engines import fio_bins, fio_client
from host_support import run_cli, start_cli, wait_for_fio_server
from netns_support import Hosts

ROOT = pytest.mark.root  # the namespace tests; the IPv6 loopback one runs as anyone
PORT = 8765
RUN_TIMEOUT_S = 180


@pytest.fixture
def servers(netns):
    return netns.with_fio(2)


def _read_run(out: str) -> dict:
    """`run --json`'s document (results/document.py: "run" and "phases", each figure with its
    unit) flattened to what these tests read: the run's keys, its id, operations' figures by name."""
    document = json.loads(out)
    assert document["kind"] == "backupbench.run", document.get("kind")
    operations = [{**phase, "figures": {f["name"]: f["value"] for f in phase["figures"]}}
                  for phase in document["phases"]]
    return {**document["run"], "run_id": document["run"]["id"], "operations": operations}


def _run_args(servers: Hosts, target: Path, runtime: str) -> list[str]:
    return ["run", "--hosts", ",".join(servers.addresses.values()), str(target),
            "--operations", "active-full,restore-random", "--size", "32MiB", "--runtime", runtime,
            "--ramp", "0", "--json", "--quiet", "--no-monitor"]


def _wait_for_phase(results: Path, phase: str, host: str) -> None:
    """Until the phase's job file for `host` is written: fio's client starts right after."""
    for _ in range(600):  # bounded: 60 s
        if list(results.rglob(f"{phase}.{host}-{PORT}.fio")):
            return
        time.sleep(0.1)
    raise AssertionError(f"{phase} never started")


@ROOT
def test_two_hosts_figures_per_host_and_their_sum(servers, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    done = run_cli(_run_args(servers, target, "2s"), results=tmp_path / "results", cwd=tmp_path, timeout=RUN_TIMEOUT_S)
    out, err = done.stdout, done.stderr
    assert done.returncode == 0, err
    run = _read_run(out)
    hosts = set(servers.addresses.values())
    assert run["status"] == "complete" and run["settings"]["hosts"] == sorted(hosts)
    assert {run["host"][f"fio@{h}"] for h in hosts} == {"fio-3.33"}
    ops = {op["name"]: op for op in run["operations"]}
    assert set(ops) == {"active-full", "restore-random"}
    for name, direction in (("active-full", "write_bw"), ("restore-random", "read_bw")):
        op = ops[name]
        per_host = op["detail"]["hosts"]
        assert set(per_host) == hosts and op["detail"]["lost_hosts"] == {}
        assert all(figures[direction] > 0 for figures in per_host.values())
        assert op["figures"][direction] == pytest.approx(sum(f[direction] for f in per_host.values()))
        assert op["figures"]["hosts_reporting"] == 2
        _assert_total_p99_is_merged(op, direction.removesuffix("_bw"), tmp_path / "results" / "runs" / run["run_id"])
    assert list(target.iterdir()) == []


def _assert_total_p99_is_merged(op: dict, direction: str, run_dir: Path) -> None:
    """The total's p99 is the p99 of every host's histogram in fio's raw output summed: between
    the hosts' own p99s, and said so in the detail."""
    figure = f"{direction}_p99_lat"
    per_host = [f[figure] for f in op["detail"]["hosts"].values()]
    assert min(per_host) <= op["figures"][figure] <= max(per_host)
    assert "merged" in op["detail"]["p99_total"]
    text = (run_dir / f"{op['name']}.json").read_text()
    raw, _ = json.JSONDecoder().raw_decode(text, text.index("\n{") + 1 if not text.startswith("{") else 0)
    entries = [e for e in raw["client_stats"] if e["jobname"] != "All clients"]
    assert len(entries) == len(per_host)
    merged = fio_bins.merge(fio_bins.parse(e[direction]["lat_ns"]["bins"]) for e in entries)
    assert op["figures"][figure] == fio_bins.percentile(merged, 99.0)
    assert op["detail"]["total_percentiles_ns"][direction]["p99"] == op["figures"][figure]
    # The latency picture: the same bins summed, and each host's 1 s log, written here by fio's client.
    kind = next(k for k in op["latency"]["kinds"] if k["kind"] == direction)
    assert op["latency"]["hosts"] == 2 and kind["count"] == sum(merged.values())
    assert kind["p99"] == op["figures"][figure] and kind["over_time"][0]["seconds"]
    assert len(list(run_dir.glob(f"{op['name']}.*_lat.1.log.*"))) == 2


@ROOT
def test_a_host_without_a_server_is_refused_by_name(servers, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    args = _run_args(servers, target, "1s")
    args[2] = f"{servers.addresses[1]},{servers.addresses[2]}:{PORT + 1}"  # nothing listens there
    done = run_cli(args, results=tmp_path / "results", cwd=tmp_path, timeout=RUN_TIMEOUT_S)
    out, err = done.stdout, done.stderr
    assert done.returncode == 3, err
    assert f"{servers.addresses[2]}:{PORT + 1} is not reachable" in err
    # With --json, the refusal is an error document (results/document.py), never a run.
    assert json.loads(out)["kind"] == "backupbench.error"
    assert list(target.iterdir()) == []
    check = run_cli(["hosts", "check", args[2], "--json"], results=tmp_path / "results", cwd=tmp_path,
                    timeout=RUN_TIMEOUT_S)
    out, err = check.stdout, check.stderr
    rows = {row["host"]: row for row in json.loads(out)["hosts"]}
    assert check.returncode == 3 and f"not usable: {servers.addresses[2]}:{PORT + 1}" in err
    assert rows[servers.addresses[1]]["reachable"] and rows[servers.addresses[1]]["fio"] == "fio-3.33"
    assert not rows[f"{servers.addresses[2]}:{PORT + 1}"]["reachable"]


@ROOT
def test_a_server_lost_mid_run_leaves_the_other_host_running(servers, tmp_path):
    target, results = tmp_path / "target", tmp_path / "results"
    target.mkdir()
    child = start_cli(_run_args(servers, target, "8s"), results=results, cwd=tmp_path)
    try:
        _wait_for_phase(results, "active-full", servers.addresses[2])
        time.sleep(2)  # into the phase's I/O, not its connecting
        servers.stop_fio(2)
        # Back as systemd's Restart= would bring it: the run's cleanup job reaches it again.
        servers.start_fio(2)
        out, err = child.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err
    run = _read_run(out)
    lost, kept = servers.addresses[2], servers.addresses[1]
    ops = {op["name"]: op for op in run["operations"]}
    assert run["status"] == "complete"
    assert lost in ops["active-full"]["detail"]["lost_hosts"]
    assert any(note.startswith(f"host {lost} lost during active-full") for note in run["notes"])
    for op in ops.values():
        assert set(op["detail"]["hosts"]) == {kept} and op["figures"]["hosts_reporting"] == 1
    assert ops["restore-random"]["figures"]["read_bw"] == ops["restore-random"]["detail"]["hosts"][kept]["read_bw"]
    assert list(target.iterdir()) == []


@ROOT
@pytest.mark.parametrize("as_json", [True, False])
def test_a_host_lost_for_good_still_shows_what_the_others_measured(servers, tmp_path, as_json):
    """Host 2's server dies mid-run and stays down: its test file cannot be removed. The run is
    still stored complete (the figures are host 1's, as with a host lost and back), its tables or
    document are printed, the lost host and the file left behind are named, and the command
    ends with that line (exit 1); once the host is back, `backupbench cleanup` removes the file."""
    target, results = tmp_path / "target", tmp_path / "results"
    target.mkdir()
    args = [arg for arg in _run_args(servers, target, "8s") if as_json or arg != "--json"]
    child = start_cli(args, results=results, cwd=tmp_path)
    try:
        _wait_for_phase(results, "active-full", servers.addresses[2])
        time.sleep(2)  # into the phase's I/O, not its connecting
        servers.stop_fio(2)
        out, err = child.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    lost, kept = servers.addresses[2], servers.addresses[1]
    last = [line for line in err.splitlines() if line.strip()][-1]
    assert child.returncode == 1, err
    assert "is stored complete; left behind: test file on" in last and lost in last and "backupbench cleanup" in last
    said = " ".join(out.split())  # the terminal wraps long notes
    if as_json:
        run = _read_run(out)
        assert run["status"] == "complete" and lost in run["operations"][0]["detail"]["lost_hosts"]
        assert any(note.startswith(f"host {lost} lost during active-full") for note in run["notes"])
        assert any(note.startswith("left behind:") and lost in note for note in run["notes"])
        assert {op["name"] for op in run["operations"]} == {"active-full", "restore-random"}
        assert set(run["operations"][1]["detail"]["hosts"]) == {kept}
    else:
        assert "active-full" in said and "restore-random" in said and "MiB/s" in said
        assert f"host {lost} lost during active-full" in said and "left behind:" in said
    shown = run_cli(["show", "latest", "--json"], results=results, cwd=tmp_path, timeout=RUN_TIMEOUT_S)
    stored, _ = shown.stdout, shown.stderr
    assert json.loads(stored)["run"]["status"] == "complete"
    assert [p.name for p in target.iterdir()] == [f"backupbench-{json.loads(stored)['run']['id']}-{lost}-{PORT}.dat"]
    servers.start_fio(2)
    cleanup = run_cli(["cleanup"], results=results, cwd=tmp_path, timeout=RUN_TIMEOUT_S)
    said, problems = cleanup.stdout, cleanup.stderr
    assert cleanup.returncode == 0, said + problems
    assert list(target.iterdir()) == []


@ROOT
def test_ctrl_c_stops_every_host_and_removes_every_file(servers, tmp_path):
    target, results = tmp_path / "target", tmp_path / "results"
    target.mkdir()
    child = start_cli(_run_args(servers, target, "30s"), results=results, cwd=tmp_path)
    try:
        _wait_for_phase(results, "active-full", servers.addresses[2])
        time.sleep(1)
        assert len(list(target.iterdir())) == 2  # both hosts' test files are there
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 130, err
    assert list(target.iterdir()) == []
    # The servers' job children are gone: each server (nsenter execs fio in place) is
    # alone in its session again.
    for n, server in servers.servers.items():
        for _ in range(100):  # bounded: 10 s for fio to end its jobs after the client's quit
            if _session_members(server.pid) == {server.pid}:
                break
            time.sleep(0.1)
        assert _session_members(server.pid) == {server.pid}, n


def _session_members(sid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2:].split()
            if int(fields[3]) == sid and fields[0] != "Z":
                found.add(int(entry.name))
    return found



# ---- IPv6: two servers on ::1 ----------------------------------------------------------------

def _free_ipv6_loopback_port() -> int:
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
        probe.bind(("::1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def ipv6_servers():
    """{port: server} for two `fio --server=ip6:::1,PORT`, each in a session of its own (it forks
    a child per connection), killed with their children at the end."""
    if shutil.which("fio") is None:
        pytest.skip("needs fio")
    try:
        ports = [_free_ipv6_loopback_port(), _free_ipv6_loopback_port()]
    except OSError as exc:
        pytest.skip(f"no IPv6 loopback (::1) here: {exc}")
    started: dict[int, subprocess.Popen] = {}
    try:
        for port in ports:
            started[port] = subprocess.Popen(["fio", f"--server=ip6:::1,{port}"], stdin=subprocess.DEVNULL,
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                             start_new_session=True)
            wait_for_fio_server(fio_client.Host("::1", port), f"fio server on [::1]:{port}")
        yield started
    finally:
        for server in started.values():
            if server.poll() is None:
                os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=20)


def test_two_ipv6_hosts_on_loopback(ipv6_servers, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    names = [f"[::1]:{port}" for port in ipv6_servers]
    args = ["run", "--hosts", ",".join(names), str(target), "--operations", "active-full,restore-random",
            "--size", "32MiB", "--runtime", "2s", "--ramp", "0", "--json", "--quiet", "--no-monitor"]
    done = run_cli(args, results=tmp_path / "results", cwd=tmp_path, timeout=RUN_TIMEOUT_S)
    out, err = done.stdout, done.stderr
    assert done.returncode == 0, err
    run = _read_run(out)
    assert run["status"] == "complete" and run["settings"]["hosts"] == names
    assert {run["host"][f"fio@{name}"] for name in names} == {"fio-3.33"}
    run_dir = tmp_path / "results" / "runs" / run["run_id"]
    commands = (run_dir / "commands.txt").read_text()
    assert all(f"--client=ip6:::1,{port}" in commands for port in ipv6_servers)
    # Each host wrote its own file, named without the address's colons.
    job_files = {p.name for p in run_dir.glob("active-full.*.fio")}
    assert job_files == {f"active-full.__1-{port}.fio" for port in ipv6_servers}
    for name, direction in (("active-full", "write"), ("restore-random", "read")):
        op = next(op for op in run["operations"] if op["name"] == name)
        assert set(op["detail"]["hosts"]) == set(names) and op["detail"]["lost_hosts"] == {}
        assert op["figures"][f"{direction}_bw"] == pytest.approx(
            sum(f[f"{direction}_bw"] for f in op["detail"]["hosts"].values()))
        _assert_total_p99_is_merged(op, direction, run_dir)
    assert list(target.iterdir()) == []


@ROOT
def test_repeat_two_on_two_hosts_keeps_each_samples_hosts_and_judges_them_over_the_samples(servers, tmp_path):
    """`run --hosts A,B --repeat 2`: each phase stored with 2 samples (the document's `samples`,
    the store's samples table), the total shown as the median with its interval, each host's
    figure the median of its 2 samples, and the hosts' verdict drawn from both samples."""
    target, results = tmp_path / "target", tmp_path / "results"
    target.mkdir()
    done = run_cli([*_run_args(servers, target, "1s"), "--repeat", "2"], results=results, cwd=tmp_path,
                   timeout=RUN_TIMEOUT_S)
    out, err = done.stdout, done.stderr
    assert done.returncode == 0, err
    document = json.loads(out)
    run = _read_run(out)
    hosts = set(servers.addresses.values())
    assert run["status"] == "complete" and run["settings"]["repeat"] == 2
    run_dir = results / "runs" / run["run_id"]
    for phase in document["phases"]:
        name = phase["name"]
        bw = next(f for f in phase["figures"] if f["name"] == "effective_bw")
        assert len(bw["samples"]) == 2 and bw["value"] == pytest.approx(sum(bw["samples"]) / 2), name
        assert bw["interval"]["low"] <= bw["value"] <= bw["interval"]["high"], name
        detail = phase["detail"]
        assert [set(sample) for sample in detail["host_samples"]] == [hosts, hosts], name
        for host in hosts:  # each host's figure: the median (of two: the mean) of its two samples
            own = [sample[host]["effective_bw"] for sample in detail["host_samples"]]
            assert detail["hosts"][host]["effective_bw"] == pytest.approx(sum(own) / 2), (name, host)
        # Each sample's totals are its hosts' sum; raw files per sample.
        for index, sample in enumerate(detail["host_samples"]):
            assert bw["samples"][index] == pytest.approx(sum(f["effective_bw"] for f in sample.values()))
            assert (run_dir / f"sample-{index + 1}" / f"{name}.json").is_file()
        # Two hosts: no outlier named, and the verdict between them is over their samples.
        assert detail["lost_hosts"] == {}
    assert _stored_samples(results / "results.db", run["run_id"]) == {
        ("active-full", 1), ("active-full", 2), ("restore-random", 1), ("restore-random", 2)}
    shown = run_cli(["show", run["run_id"]], cwd=tmp_path, results=results, env={"COLUMNS": "240"},
                    timeout=RUN_TIMEOUT_S)
    assert shown.returncode == 0, shown.stderr
    flat = " ".join(shown.stdout.split())
    assert "each host: the median of its 2 samples, judged over all of them" in flat
    assert "two hosts cannot name an outlier" in flat and "on one sample" not in flat
    page = tmp_path / "report.html"
    reported = run_cli(["report", run["run_id"], "--html", str(page)], cwd=tmp_path, results=results,
                       timeout=RUN_TIMEOUT_S)
    assert reported.returncode == 0, reported.stderr
    # Each total's median beside its samples' 95% interval (a cell of its own in HTML; the
    # terminal may wrap it).
    assert len(re.findall(r"<td[^>]*>(?:<[^>]+>)*2: [\d,.]+–[\d,.]+(?: log| min-max)?, CV", page.read_text())) == 2
    assert list(target.iterdir()) == []


def _stored_samples(database: Path, run_id: str) -> set[tuple[str, int]]:
    """(operation, sample) of the store's samples table for the run's effective_bw."""
    with closing(sqlite3.connect(database)) as db:
        return set(db.execute("SELECT operation, sample FROM samples WHERE run_id = ? AND name = 'effective_bw'",
                              (run_id,)))
