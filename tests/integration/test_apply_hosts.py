"""`backupbench apply` of a recipe with [hosts], for real: two fio servers, each in a network
namespace of its own reached over a veth pair (10.232.N.1 here, 10.232.N.2 there), no mocks.

The setup is test_hosts_fio.py's, on other subnets (10.232.x) and other names, so the two files
can run at the same time. The namespaces share this machine's mount namespace: both servers
write their test files into the test's own directory, which must be empty at the end. Every
namespace, veth pair and server is removed by the fixture, even on failure.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from backupbench.engines import fio_client
from backupbench.errors import EngineError
from backupbench.results.store import Store

pytestmark = pytest.mark.root
PORT = 8765
RUN_TIMEOUT_S = 240


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


@dataclass
class Servers:
    """Namespaces TAG-N (N = 1, 2), each with fio --server=ip:10.232.X.2,8765 on a veth pair
    10.232.X.0/30; X comes from the test's pid, so concurrent test runs pick other subnets."""

    tag: str
    first_octet: int
    addresses: dict[int, str] = field(default_factory=dict)
    servers: dict[int, subprocess.Popen] = field(default_factory=dict)
    namespaces: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)

    def make(self, n: int) -> None:
        ns, here, there = f"{self.tag}-{n}", f"{self.tag}{n}h", f"{self.tag}{n}n"
        net = f"10.232.{self.first_octet + n - 1}"
        in_use = subprocess.run(["ip", "-br", "addr"], capture_output=True, text=True, timeout=20).stdout
        assert f" {net}." not in in_use, f"{net}.0/30 is in use on this machine"
        _ip("netns", "add", ns)
        self.namespaces.append(ns)
        _ip("link", "add", here, "type", "veth", "peer", "name", there)
        self.links.append(here)
        _ip("link", "set", there, "netns", ns)
        _ip("addr", "add", f"{net}.1/30", "dev", here)
        _ip("link", "set", here, "up")
        _ip("netns", "exec", ns, "ip", "addr", "add", f"{net}.2/30", "dev", there)
        _ip("netns", "exec", ns, "ip", "link", "set", there, "up")
        _ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
        self.addresses[n] = f"{net}.2"
        self.start(n)

    def start(self, n: int) -> None:
        """The server, in a session of its own: it forks a child per connection, and kill()
        must take those children (the jobs) too."""
        argv = ["ip", "netns", "exec", f"{self.tag}-{n}", "fio", f"--server=ip:{self.addresses[n]},{PORT}"]
        self.servers[n] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL, start_new_session=True)
        host = fio_client.Host(self.addresses[n], PORT)
        for _ in range(50):  # bounded: up to ~10 s for the server to listen
            try:
                fio_client.probe(host, timeout_s=5)
                return
            except EngineError:
                time.sleep(0.2)
        raise AssertionError(f"fio server in {self.tag}-{n} did not answer")

    def kill(self, n: int) -> None:
        server = self.servers.pop(n, None)
        if server is not None and server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
        if server is not None:
            server.wait(timeout=20)

    def teardown(self) -> list[str]:
        problems = []
        for n in list(self.servers):
            self.kill(n)
        for ns in self.namespaces:
            done = subprocess.run(["ip", "netns", "del", ns], capture_output=True, text=True, timeout=20)
            if done.returncode:
                problems.append(f"ip netns del {ns}: {done.stderr.strip()}")
        for link in self.links:  # gone with its peer's namespace; make sure
            subprocess.run(["ip", "link", "del", link], capture_output=True, timeout=20)
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=20).stdout
        problems += [f"namespace {ns} still there" for ns in self.namespaces if ns in listed]
        return problems


@pytest.fixture
def servers():
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("fio") is None:
        pytest.skip("needs root, ip (iproute2) and fio for the network namespaces and servers")
    made = Servers(tag=f"bba{os.getpid() % 10000}", first_octet=100 + (os.getpid() % 70) * 2)
    try:
        made.make(1)
        made.make(2)
        yield made
    finally:
        problems = made.teardown()
        assert not problems, problems


def _cli(args: list[str], results: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "BACKUPBENCH_RESULTS": str(results)}
    return subprocess.run([sys.executable, "-m", "backupbench", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=RUN_TIMEOUT_S)


def _recipe(tmp_path: Path, names: list[str], target: Path) -> Path:
    """kb2014 (two phases, tiny) and first-write, one after the other, on `names`."""
    recipe = tmp_path / "hosts.toml"
    recipe.write_text(
        'name = "hosts-test"\n'
        f"[hosts]\nnames = {json.dumps(names)}\npath = {json.dumps(str(target))}\n"
        '[[workload]]\nkind = "kb2014"\noperations = ["active-full", "restore-random"]\nsize = "16MiB"\n'
        'runtime = "1s"\n'
        '[[workload]]\nkind = "first-write"\nsize = "8MiB"\n')
    return recipe


def _stored_runs(results: Path) -> list:
    """The runs in the store, read as `show` and `history` read them."""
    if not (results / "results.db").exists():
        return []
    return Store(results / "results.db").list_runs()


def test_apply_runs_each_workload_on_both_hosts_and_stores_one_run(servers, tmp_path):
    target, results = tmp_path / "target", tmp_path / "results"
    target.mkdir()
    hosts = [servers.addresses[1], servers.addresses[2]]
    recipe = _recipe(tmp_path, hosts, target)
    plan = _cli(["plan", str(recipe)], results, tmp_path)
    assert plan.returncode == 0, plan.stderr
    assert f"kb2014 on 2 fio servers: {hosts[0]}, {hosts[1]}" in plan.stdout
    assert list(target.iterdir()) == [] and _stored_runs(results) == []  # plan runs nothing

    done = _cli(["apply", str(recipe), "--quiet"], results, tmp_path)
    assert done.returncode == 0, done.stderr
    [run] = _stored_runs(results)
    assert run.status == "complete" and run.kind == "recipe" and run.target == "hosts-test"
    assert run.settings["recipe"]["hosts"]["names"] == hosts
    assert {run.host[f"fio@{h}"] for h in hosts} == {run.host["fio"]}
    ops = {op.name: op for op in run.operations}
    assert set(ops) == {"1-kb2014/active-full", "1-kb2014/restore-random", "2-first-write/first-write",
                        "2-first-write/overwrite", "2-first-write/read"}
    for name, direction in (("1-kb2014/active-full", "write_bw"), ("1-kb2014/restore-random", "read_bw"),
                            ("2-first-write/first-write", "write_bw")):
        per_host = ops[name].detail["hosts"]
        assert set(per_host) == set(hosts) and ops[name].detail["lost_hosts"] == {}
        assert all(figures[direction] > 0 for figures in per_host.values())
        assert ops[name].figures[direction] == pytest.approx(sum(f[direction] for f in per_host.values()))
        assert ops[name].figures["hosts_reporting"] == 2
    assert list(target.iterdir()) == []  # each host's test file removed, both workloads'
    assert f"Hosts of run {run.run_id}" in done.stdout

    shown = _cli(["show", run.run_id], results, tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert f"Hosts of run {run.run_id}" in shown.stdout
    assert all(host in shown.stdout for host in hosts) and "2-first-write/overwrite" in shown.stdout


def test_a_host_down_before_the_start_refuses_the_recipe_by_name(servers, tmp_path):
    target, results = tmp_path / "target", tmp_path / "results"
    target.mkdir()
    down = f"{servers.addresses[2]}:{PORT + 1}"  # that host's address, but nothing listens on the port
    recipe = _recipe(tmp_path, [servers.addresses[1], down], target)
    done = _cli(["apply", str(recipe), "--quiet"], results, tmp_path)
    assert done.returncode == 3, done.stderr
    assert f"{down} is not reachable" in done.stderr and "Run " not in done.stdout
    assert list(target.iterdir()) == []  # the host that answered was given no job
    assert _stored_runs(results) == []
