"""runner/host_monitor.py against real `backupbench agent` processes on 127.0.0.1, each sampling
this machine's disks every second: each host's samples fetched into its own CSV in the local
monitor's format, phases marked, a killed agent noted and given up on, a restarted one read from
its first sample, the agents checked before a run. Seconds of real sampling per test, hence here
and not in tests/unit (which keeps host_monitor's parts that need no agent). Every agent started
here is stopped in `finally`; the CSVs go to the test's temporary folder."""

from __future__ import annotations

import csv
import signal
import time
from datetime import datetime
from pathlib import Path

import pytest

from backupbench import __version__
from backupbench.agent.client import AgentClient, split_address
from backupbench.engines.fio_client import Host
from backupbench.errors import RefusedError
from backupbench.monitor import csvlog
from backupbench.runner import host_monitor
from monitor_support import RecordedHooks
from netns_support import Agent, token_file

pytestmark = pytest.mark.real


@pytest.fixture
def agents(tmp_path):
    """Two agents on 127.0.0.1 with one token: {name: (Agent, AgentClient)}."""
    token = token_file(tmp_path)
    started: dict[str, tuple[Agent, AgentClient]] = {}
    try:
        for name in ("host-a", "host-b"):
            root = tmp_path / f"root-{name}"
            root.mkdir()
            agent = Agent([], "127.0.0.1:0", token, root, tmp_path / f"{name}.log")
            started[name] = (agent, agent.client(token))
        yield started
    finally:
        for agent, _ in started.values():
            agent.stop(signal.SIGKILL)

def _rows(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="") as handle:
        lines = list(csv.reader(handle))
    return lines[0], lines[1:]

def _until(condition, what: str, attempts: int = 150) -> None:
    for _ in range(attempts):  # bounded: 150 x 0.1 s
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"never: {what}")

def test_each_hosts_samples_land_in_its_own_csv_in_the_monitor_format(agents, tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    clients = {name: client for name, (_, client) in agents.items()}
    notes: list[str] = []
    hooks = RecordedHooks()
    with host_monitor.sampling(clients, folder, hooks, notes) as sampled:
        sampled.will_create({"kind": "file"})
        sampled.started("active-full", "write", "write qd1")
        sampled.progress("active-full", 0.5, "")
        _until(lambda: all(len(feed.points) >= 3 for feed in sampled.sampler.feeds), "3 samples from each host")
        sampled.finished("active-full", {"effective_bw": 1.0}, {"raw": "x.json"})
        sampled.started("layout", "lay out", "write", measured=False)
        sampled.finished("layout", {})
        sampled.removed(7)
    assert notes == []
    assert [c[0] for c in hooks.calls] == ["will_create", "started", "progress", "finished", "started", "finished",
                                           "removed"]
    detail = hooks.finished_detail["active-full"]
    assert detail["raw"] == "x.json"   # the workload's own detail is kept
    timeline = detail[host_monitor.DETAIL_KEY]
    assert timeline["from_wall"] < timeline["to_wall"] and timeline["lost"] == {}
    assert set(timeline["hosts"]) == {"host-a", "host-b"}
    assert host_monitor.DETAIL_KEY not in hooks.finished_detail["layout"]   # not measured: no span
    for name, where in timeline["hosts"].items():
        assert where["csv"] == f"monitor.{name}.csv" and where["disks"]
        header, rows = _rows(folder / where["csv"])
        assert header == csvlog.header(csvlog.read_csv((folder / where["csv"]).read_text()).devices)
        assert header[:2] == ["timestamp", "elapsed_s"] and f"{where['disks'][0]}:rMB/s" in header
        assert len(rows) >= 3
        walls = [datetime.fromisoformat(row[0]).timestamp() for row in rows]
        elapsed = [float(row[1]) for row in rows]
        assert walls == sorted(walls) and len(set(walls)) == len(walls)
        assert elapsed == sorted(elapsed)
        series = csvlog.load(folder / where["csv"])
        assert all(v >= 0 for v in series.column(f"{where['disks'][0]}:wMB/s"))
    figures = sampled.sampler.figures["active-full"]
    assert set(figures) == {"host-a", "host-b"}
    assert all(f.samples >= 1 and 0 <= f.mean_mib_s <= f.peak_mib_s for f in figures.values())

def test_an_agent_killed_mid_run_is_noted_and_the_others_go_on(agents, tmp_path):
    clients = {name: client for name, (_, client) in agents.items()}
    notes: list[str] = ["already here"]
    hooks = RecordedHooks()
    with host_monitor.sampling(clients, tmp_path, hooks, notes) as sampled:
        sampled.started("restore", "read", "read qd1")
        feeds = {feed.name: feed for feed in sampled.sampler.feeds}
        _until(lambda: feeds["host-b"].points, "a sample from host-b")
        agents["host-b"][0].stop(signal.SIGKILL)
        _until(lambda: feeds["host-b"].lost, "host-b given up on", attempts=300)
        before = len(feeds["host-a"].points)
        _until(lambda: len(feeds["host-a"].points) > before, "host-a still sampled")
        sampled.finished("restore", {})
        stopping_at = time.monotonic()
    # Not a speed figure: the point is that a dead agent cannot hold the run (bounded calls).
    assert time.monotonic() - stopping_at < 30
    assert notes[0] == "already here"
    assert len(notes) == 2 and notes[1].startswith("host host-b: no more samples from its agent (")
    assert "its timeline ends there" in notes[1]
    timeline = hooks.finished_detail["restore"][host_monitor.DETAIL_KEY]
    assert list(timeline["lost"]) == ["host-b"]
    # What it gave before it died is kept.
    _, rows = _rows(tmp_path / "monitor.host-b.csv")
    assert rows

def test_an_interrupted_run_still_closes_every_csv(agents, tmp_path):
    clients = {name: client for name, (_, client) in agents.items()}
    notes: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        with host_monitor.sampling(clients, tmp_path, RecordedHooks(), notes) as sampled:
            _until(lambda: all(feed.points for feed in sampled.sampler.feeds), "a sample from each host")
            raise KeyboardInterrupt
    assert all(not thread.is_alive() for thread in sampled.sampler._threads.values())
    for name in clients:
        _, rows = _rows(tmp_path / f"monitor.{name}.csv")
        assert rows

def test_check_agents_names_each_one_that_is_down_or_refuses_the_token(agents, tmp_path):
    clients = {name: client for name, (_, client) in agents.items()}
    assert host_monitor.check_agents(clients) == {"host-a": __version__, "host-b": __version__}
    wrong = {"good": clients["host-a"], "wrong-token": agents["host-a"][0].client("z" * 64),
             "down": AgentClient("127.0.0.1:1", "z" * 64, timeout=2)}
    with pytest.raises(RefusedError) as refused:
        host_monitor.check_agents(wrong)
    message = refused.value.message
    assert message.startswith("agent check failed: ")
    assert "wrong-token: agent " in message and "refused the token" in message
    assert "down: agent 127.0.0.1:1" in message and "good" not in message

@pytest.fixture
def one_agent(tmp_path):
    """One agent on 127.0.0.1 and its token file: (Agent, token path); stopped in `finally`."""
    token = token_file(tmp_path)
    (tmp_path / "root").mkdir()
    agent = Agent([], "127.0.0.1:0", token, tmp_path / "root", tmp_path / "agent.log")
    try:
        yield agent, token
    finally:
        agent.stop(signal.SIGKILL)

def test_two_servers_on_one_machine_are_fetched_once_and_drawn_as_one_line(one_agent, tmp_path):
    agent, token = one_agent
    port = split_address(agent.address)[1]
    clients = host_monitor.host_agents((Host("127.0.0.1", 8765), Host("127.0.0.1", 8766)), token, port, agent.trust)
    folder = tmp_path / "run"
    hooks, notes = RecordedHooks(), []
    with host_monitor.sampling(clients, folder, hooks, notes) as sampled:
        sampled.started("active-full", "write", "write qd1")
        _until(lambda: len(sampled.sampler.feeds[0].points) >= 2, "2 samples from the machine")
        sampled.finished("active-full", {})
    assert notes == []
    timeline = hooks.finished_detail["active-full"][host_monitor.DETAIL_KEY]
    assert list(timeline["hosts"]) == ["127.0.0.1"]
    assert sorted(path.name for path in folder.iterdir()) == ["monitor.127.0.0.1.csv"]

def _newest(client: AgentClient) -> int:
    return int(client.monitor(since=0)["last"])


def test_a_restarted_agent_is_noted_and_read_from_its_first_sample_even_past_since(one_agent, tmp_path):
    agent, token = one_agent
    client = agent.client(token)
    _until(lambda: _newest(client) >= 3, "3 samples from the first agent", attempts=100)
    feed = host_monitor.HostFeed("host-a", client, tmp_path / "monitor.host-a.csv")
    feed.poll()                        # reached: from its newest sample on
    _until(lambda: not feed.poll() and len(feed.points) >= 1 and feed.since >= 3, "a sample read")
    before, since = len(feed.points), feed.since
    agent.stop(signal.SIGKILL)
    again = Agent([], agent.address, token, tmp_path / "root", tmp_path / "agent-again.log", cert=agent.cert)
    try:
        # The restarted agent's numbers pass where the feed stood: a "since" call alone would
        # now skip its first `since` samples and look like an agent that never went away.
        _until(lambda: _newest(client) > since + 1, "the restarted agent past the feed's number", attempts=150)
        first_walls = [s["wall"] for s in client.monitor(since=0)["samples"]][:since]
        while feed.poll():
            pass
    finally:
        again.stop(signal.SIGKILL)
    feed.close()
    assert len(feed.notes) == 1 and feed.notes[0].startswith("agent of host host-a restarted during the run")
    read_after = [wall for wall, _, _ in feed.points[before:]]
    assert read_after[:len(first_walls)] == first_walls   # none of its early samples skipped
    _, rows = _rows(tmp_path / "monitor.host-a.csv")
    assert len(rows) == len(feed.points)
