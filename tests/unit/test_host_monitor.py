"""runner/host_monitor.py against real `backupbench agent` processes on 127.0.0.1: each host's
samples fetched into its own CSV in the local monitor's format, phases marked, a killed agent
noted and given up on, the agents checked before a run. Every agent started here is stopped in
`finally`; the CSVs go to the test's temporary folder."""

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
from backupbench.errors import InputError, RefusedError
from backupbench.monitor import csvlog
from backupbench.runner import host_monitor
from netns_support import Agent, token_file


class Recorded:
    """PhaseHooks that keep what they were told (the pipeline's PhaseRecorder stores it)."""

    def __init__(self):
        self.calls: list[tuple] = []
        self.finished_detail: dict[str, dict] = {}

    def started(self, name, title, pattern, measured=True, warmup_s=0.0):
        self.calls.append(("started", name, measured))

    def progress(self, name, fraction, detail):
        self.calls.append(("progress", name, fraction))

    def finished(self, name, figures, detail=None, failed=False):
        self.calls.append(("finished", name, figures))
        self.finished_detail[name] = detail or {}

    def will_create(self, artefact):
        self.calls.append(("will_create", artefact["kind"]))
        return 7

    def removed(self, artefact_id, how="removed"):
        self.calls.append(("removed", artefact_id, how))


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
    hooks = Recorded()
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
    hooks = Recorded()
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
        with host_monitor.sampling(clients, tmp_path, Recorded(), notes) as sampled:
            _until(lambda: all(feed.points for feed in sampled.sampler.feeds), "a sample from each host")
            raise KeyboardInterrupt
    assert all(not thread.is_alive() for thread in sampled.sampler._threads.values())
    for name in clients:
        _, rows = _rows(tmp_path / f"monitor.{name}.csv")
        assert rows


def test_without_agents_the_hooks_pass_through_untouched(tmp_path):
    hooks = Recorded()
    with host_monitor.sampling({}, tmp_path, hooks, []) as given:
        assert given is hooks
    assert list(tmp_path.iterdir()) == []


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


def test_host_agents_reads_the_token_file_and_uses_each_hosts_address(tmp_path):
    hosts = (Host("10.0.0.5"), Host("backup-2.lan", 8766))
    assert host_monitor.host_agents(hosts, None) == {}
    clients = host_monitor.host_agents(hosts, token_file(tmp_path), 7481)
    assert {name: (c.host, c.port) for name, c in clients.items()} == {
        "10.0.0.5": ("10.0.0.5", 7481), "backup-2.lan:8766": ("backup-2.lan", 7481)}
    loose = tmp_path / "loose"
    loose.write_text("x" * 32)
    loose.chmod(0o644)
    with pytest.raises(RefusedError, match="others may read it"):
        host_monitor.host_agents(hosts, loose)


def test_client_addresses_take_names_but_not_nonsense():
    assert split_address("backup-2.lan:7480") == ("backup-2.lan", 7480)
    assert split_address("[::1]:7480") == ("::1", 7480)
    for bad in ("no-port", "host:port", "-bad:7480", "host:99999"):
        with pytest.raises(InputError):
            split_address(bad)


def test_file_tags_are_safe_and_distinct():
    assert host_monitor.file_tags(["10.0.0.5", "10.0.0.5:8766", "10.0.0.5_8766"]) == {
        "10.0.0.5": "10.0.0.5", "10.0.0.5:8766": "10.0.0.5_8766", "10.0.0.5_8766": "10.0.0.5_8766_"}


def test_hosts_agent_unit_prints_a_tls_unit_on_the_default_port(cli, tmp_path):
    tls = ["--tls-cert", "/etc/backupbench/agent.pem", "--tls-key", "/etc/backupbench/agent.key"]
    done = cli("hosts", "agent-unit", "10.0.0.5", "--token-file", "/etc/backupbench/token", "--root", "/srv/bb", *tls)
    assert done.returncode == 0, done.stderr
    exec_line = next(line for line in done.stdout.splitlines() if line.startswith("ExecStart="))
    assert exec_line.endswith(" agent --listen 10.0.0.5:7480 --token-file /etc/backupbench/token --root /srv/bb "
                              "--tls-cert /etc/backupbench/agent.pem --tls-key /etc/backupbench/agent.key")
    assert "User=root" in done.stdout and "Restart=always" in done.stdout
    # How to make the certificate and read its fingerprint, for this address and these paths.
    assert "subjectAltName=IP:10.0.0.5 -keyout /etc/backupbench/agent.key -out /etc/backupbench/agent.pem" in done.stdout
    assert "openssl x509 -in /etc/backupbench/agent.pem -noout -fingerprint -sha256" in done.stdout
    plain = cli("hosts", "agent-unit", "10.0.0.5", "--token-file", "/t", "--root", "/r", "--insecure-plain-http")
    assert plain.returncode == 0 and "--root /r --insecure-plain-http\n" in plain.stdout
    assert "PLAIN HTTP" in plain.stdout and "--tls-cert" not in plain.stdout
    for args, says in ((["0.0.0.0", "--token-file", "/t", "--root", "/r", *tls], "every address"),
                       (["::ffff:0.0.0.0", "--token-file", "/t", "--root", "/r", *tls], "every address"),
                       (["10.0.0.5", "--token-file", "token", "--root", "/r", *tls], "must be absolute"),
                       (["10.0.0.5", "--token-file", "/t", "--root", "/r", "--tls-cert", "a.pem", "--tls-key", "/k"],
                        "must be absolute"),
                       (["10.0.0.5", "--token-file", "/t", "--root", "/r"], "needs --tls-cert FILE and --tls-key"),
                       (["10.0.0.5", "--token-file", "/t", "--root", "/r", *tls, "--insecure-plain-http"],
                        "do not go together")):
        refused = cli("hosts", "agent-unit", *args)
        assert refused.returncode != 0 and says in refused.stderr and refused.stdout == "", refused.stderr


def test_run_refuses_agent_flags_where_they_do_not_apply(cli, tmp_path):
    token = token_file(tmp_path)
    for args, says in ((["--agent-token-file", str(token)], "--agent-token-file applies to --hosts or --agents"),
                       (["--hosts", "10.0.0.5", "/backup", "--agent-port", "7481"],
                        "--agent-port applies to --hosts with --agent-token-file"),
                       (["--hosts", "10.0.0.5", "/backup", "--agent-insecure-plain-http"],
                        "--agent-insecure-plain-http applies to --agents or --hosts with --agent-token-file"),
                       (["--hosts", "10.0.0.5", "/backup", "--agent-token-file", str(token), "--agent-fingerprint",
                         "sha256:12"], "--agent-fingerprint 'sha256:12' is not sha256:<64 hex digits>"),
                       (["--hosts", "10.0.0.5", "/backup", "--agent-token-file", str(token), "--agent-ca",
                         str(token), "--agent-insecure-plain-http"],
                        "--agent-ca and --agent-insecure-plain-http do not go together"),
                       (["--hosts", "10.0.0.5", "/backup", "--agent-token-file", str(token), "--agent-ca", str(token)],
                        f"--agent-ca {token} holds no usable PEM certificate")):
        done = cli("run", "--workload", "kb2014", *args)
        assert done.returncode == 2 and says in done.stderr, done.stderr


def test_an_agent_names_its_whole_disks_so_stacked_devices_count_once(tmp_path):
    from backupbench.agent.feed import whole_disks
    from backupbench.hostfiles import HostFiles

    block = tmp_path / "sys" / "class" / "block"
    for name, below in (("sda", []), ("sdb", []), ("dm-0", ["sda"]), ("md0", ["sda", "sdb"]), ("loop3", []),
                        ("zram0", [])):
        (block / name / "slaves").mkdir(parents=True)
        for member in below:
            (block / name / "slaves" / member).mkdir()
    host = HostFiles(tmp_path)
    assert whole_disks(host, ["dm-0", "sda", "md0", "sdb", "loop3", "zram0"]) == ["sda", "sdb"]
    # A host whose devices are all loop devices: those, rather than nothing.
    assert whole_disks(host, ["loop3", "dm-0"]) == ["loop3"]


def test_an_ipv6_hosts_agent_is_reached_at_its_bracketed_address(tmp_path):
    token = tmp_path / "token"
    token.write_text("t" * 32)
    token.chmod(0o600)
    clients = host_monitor.host_agents([Host("fd00::5"), Host("10.0.0.6", 8766)], token, 7481)
    assert clients["[fd00::5]"].host == "fd00::5" and clients["[fd00::5]"].port == 7481
    assert clients["10.0.0.6:8766"].host == "10.0.0.6" and clients["10.0.0.6:8766"].port == 7481


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


def test_fio_servers_sharing_an_address_share_one_agent_feed(tmp_path):
    hosts = (Host("10.0.0.5"), Host("10.0.0.5", 8766), Host("fd00::5", 8770), Host("fd00:0::5", 8771),
             Host("Backup-2.lan", 8765), Host("backup-2.lan", 8766), Host("10.0.0.6", 8766))
    clients = host_monitor.host_agents(hosts, token_file(tmp_path), 7481)
    # One per machine, named by its address; a server alone on its address keeps its own name.
    assert {name: (c.host, c.port) for name, c in clients.items()} == {
        "10.0.0.5": ("10.0.0.5", 7481), "[fd00::5]": ("fd00::5", 7481), "Backup-2.lan": ("Backup-2.lan", 7481),
        "10.0.0.6:8766": ("10.0.0.6", 7481)}


def test_two_servers_on_one_machine_are_fetched_once_and_drawn_as_one_line(one_agent, tmp_path):
    agent, token = one_agent
    port = split_address(agent.address)[1]
    clients = host_monitor.host_agents((Host("127.0.0.1", 8765), Host("127.0.0.1", 8766)), token, port, agent.trust)
    folder = tmp_path / "run"
    hooks, notes = Recorded(), []
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


def _wire(seq: int, mib: dict[str, float]) -> dict:
    from dataclasses import asdict, fields

    from backupbench.monitor.rates import DiskRates

    rates = {name: asdict(DiskRates(**{**{f.name: 0.0 for f in fields(DiskRates)}, "wMB_s": value}))
             for name, value in mib.items()}
    return {"seq": seq, "wall": 1000.0 + seq, "elapsed_s": float(seq), "interval_s": 1.0, "cpu": None,
            "memory": None, "load": None, "disks": rates}


class _FakeAgent:
    """An agent's monitor answers, passed in as the feed's client: whole disks sda, sdb; its root on sdb."""

    def __init__(self, target: list[str]):
        self.target, self.calls = target, 0

    def monitor(self, since: int) -> dict:
        self.calls += 1
        samples = [] if self.calls == 1 else [_wire(2, {"sda": 300.0, "sdb": 40.0, "dm-0": 40.0})]
        return {"samples": samples, "last": 2, "dropped": 0, "devices": ["sda", "sdb", "dm-0"],
                "disks": ["sda", "sdb"], "target_disks": self.target, "interval_s": 1.0, "instance": "i",
                "target": "/srv/agent: xfs on dm-0; members sdb" if self.target else "root /srv on no sampled disk"}


@pytest.mark.parametrize("target, disks, mib", [(["sdb"], ["sdb"], 40.0), ([], ["sda", "sdb"], 340.0)])
def test_a_hosts_line_sums_the_disks_under_its_agents_root_else_its_whole_disks(tmp_path, target, disks, mib):
    feed = host_monitor.HostFeed("host-a", _FakeAgent(target), tmp_path / "monitor.host-a.csv")
    feed.poll()                 # reached
    feed.poll()                 # one sample
    feed.close()
    assert feed.disks == disks and feed.of_target == bool(target)
    assert [point[2] for point in feed.points] == [mib]
    assert feed.stack.startswith("/srv/agent: xfs on dm-0" if target else "root /srv")
