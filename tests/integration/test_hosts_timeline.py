"""Per-host timelines (issue 15): each host's `backupbench agent` samples fetched during a
multi-host run, drawn one line per host in the HTML report.

- In headless Chromium: a run whose phase was sampled from two real agents on 127.0.0.1
  (runner/host_monitor.py), stored, reported with `backupbench report`; the page shows the
  per-host timeline and makes no request.
- `run --hosts ... --agent-token-file F` for real: two network namespaces, each with a fio
  server and an agent on its own address (10.231.X.N+1), no mocks.

Everything started or made here (agents, servers, namespaces, veth pairs, folders) is removed
in `finally` blocks or fixtures.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from backupbench.runner import host_monitor
from host_support import CliResult, run_cli, start_cli
from netns_support import Agent, Hosts, token_file

pytestmark = pytest.mark.real
RUN_TIMEOUT_S = 240


def _chromium_tools():
    import browser_support as browser

    if browser.CHROMIUM is None:
        pytest.skip("chromium is not installed (make test installs it: apt-get install chromium)")
    pytest.importorskip("matplotlib", reason="the report's charts need matplotlib (make test installs it)")
    return browser


class Recorded:
    """PhaseHooks keeping each finished phase's figures and detail, as PhaseRecorder stores them."""

    def __init__(self):
        self.finished_ops: list[tuple[str, dict, dict]] = []

    def started(self, name, title, pattern, measured=True, warmup_s=0.0):
        pass

    def progress(self, name, fraction, detail):
        pass

    def finished(self, name, figures, detail=None, failed=False):
        self.finished_ops.append((name, figures, detail or {}))

    def will_create(self, artefact):
        return None

    def removed(self, artefact_id, how="removed"):
        pass


def _busy_disk(folder: Path, mib: int = 48) -> None:
    """Real writes reaching this machine's disk during the phase (fsync'd), then removed."""
    path = folder / "load.bin"
    with open(path, "wb") as handle:
        for _ in range(mib):
            handle.write(os.urandom(2**20))
        handle.flush()
        os.fsync(handle.fileno())
    path.unlink()


def _stored_run(results: Path, run_id: str, timeline_phase: tuple[str, dict, dict]) -> None:
    from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
    from backupbench.results.phase import HostAccount
    from backupbench.results.store import Store

    name, _, detail = timeline_phase
    hosts = list(detail[host_monitor.DETAIL_KEY]["hosts"])
    per_host = {host: {"effective_bw": (100 + 10 * i) * 2**20, "write_bw": (100 + 10 * i) * 2**20}
                for i, host in enumerate(hosts)}
    figures = {k: sum(f[k] for f in per_host.values()) for k in ("effective_bw", "write_bw")}
    rest = {key: value for key, value in detail.items() if key != host_monitor.DETAIL_KEY}
    op = OperationRecord(name, "write qd1", COMPLETE, figures=figures, detail=rest,
                         hosts=HostAccount([per_host], {}, detail[host_monitor.DETAIL_KEY]))
    run = RunRecord(run_id, "kb2014", ",".join(hosts) + ":/backup", {"hosts": hosts}, status=COMPLETE,
                    operations=[op])
    store = Store(results / "results.db")
    store.create_run(run)
    store.save_operation(run_id, 0, op)
    store.finish_run(run)


def test_per_host_timeline_is_drawn_and_visible_in_chromium(cli, tmp_path):
    browser = _chromium_tools()
    import matplotlib.image
    import numpy

    from backupbench.report import palette

    run_id = "20261125T000000-71e11e00"
    folder = cli.results / "runs" / run_id
    folder.mkdir(parents=True)
    token = token_file(tmp_path)
    agents: list[Agent] = []
    try:
        for name in ("a", "b"):
            (tmp_path / f"root-{name}").mkdir()
            agents.append(Agent([], "127.0.0.1:0", token, tmp_path / f"root-{name}", tmp_path / f"{name}.log"))
        clients = {f"host-{name}": agent.client(token)
                   for name, agent in zip("ab", agents)}
        hooks, notes = Recorded(), []
        with host_monitor.sampling(clients, folder, hooks, notes) as sampled:
            sampled.started("active-full", "write", "write qd1")
            time.sleep(1.5)
            _busy_disk(tmp_path)
            # Past 5 samples: a shorter phase gets no timeline (report/charts.MIN_TIMELINE_SAMPLES).
            time.sleep(4.5)
            sampled.finished("active-full", {})
    finally:
        for agent in agents:
            agent.stop()
    assert notes == []
    _stored_run(cli.results, run_id, hooks.finished_ops[0])
    done = browser.report(cli, run_id, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = Path(done.stdout.strip())

    dom = browser.chromium(tmp_path, page.as_uri(), "--dump-dom").stdout
    assert "Per-host timelines (1 s samples from each host" in dom
    assert 'aria-label="Per-host timeline of active-full: host-a, host-b"' in dom
    assert "host-a: mean " in dom and "host-b: mean " in dom and "raw: monitor.host-a.csv" in dom
    assert dom.count('aria-label="Per-host timeline of') == 1   # the one phase, one chart
    assert "<script" not in dom

    shot = tmp_path / "timeline.png"
    chromium_height = browser.HEIGHT * 2
    browser.chromium(tmp_path, page.as_uri() + "#host-timelines", f"--screenshot={shot}",
                     f"--window-size={browser.WIDTH},{chromium_height}")
    pixels = matplotlib.image.imread(shot)[:, :, :3]
    # host-b's line is in the page's second colour of things (report/palette.py), drawn nowhere
    # else on the page; both agents sample this one machine, so it lies on host-a's line.
    green = tuple(int(palette.THINGS[1][i:i + 2], 16) / 255 for i in (1, 3, 5))
    assert (numpy.abs(pixels - numpy.array(green)) < 0.08).all(axis=2).sum() > 200, "no per-host line drawn"

    net_log = tmp_path / "net.json"
    browser.chromium(tmp_path, page.as_uri(), "--dump-dom", f"--log-net-log={net_log}",
                     "--net-log-capture-mode=Everything", name="net-profile")
    assert browser.page_requests(net_log) == []


# ---------------------------------------------------------------------------------------------
# `run --hosts` with each host's agent


@pytest.fixture
def hosts(netns):
    return netns.with_fio(2)


def _run(args: list[str], results: Path, cwd: Path) -> CliResult:
    return run_cli(args, cwd=cwd, results=results, timeout=RUN_TIMEOUT_S)


def _run_args(made: Hosts, target: Path) -> list[str]:
    return ["run", "--hosts", ",".join(made.addresses.values()), str(target), "--operations",
            "active-full,restore-random", "--size", "32MiB", "--runtime", "6s", "--quiet"]


def _stored(results: Path) -> dict:
    """The one run in `results`, as its folder's result.json holds it (the record: a phase's hosts
    and their timeline in its `hosts`, results/phase.py)."""
    (folder,) = (results / "runs").iterdir()
    return json.loads((folder / "result.json").read_text())


def test_run_hosts_with_agents_keeps_each_hosts_samples_and_reports_them(hosts, tmp_path):
    token = token_file(tmp_path)
    for n in (1, 2):
        hosts.start_agent(n, token)
    target, results = tmp_path / "target", tmp_path / "results"
    target.mkdir()
    done = _run([*_run_args(hosts, target), "--agent-token-file", str(token), *hosts.trust_args], results, tmp_path)
    assert done.returncode == 0, done.stderr
    run = _stored(results)
    names = sorted(hosts.addresses.values())
    assert run["status"] == "complete" and not any("per-host timeline" in note for note in run["notes"])
    assert sorted(k.removeprefix("backupbench@") for k in run["host"] if k.startswith("backupbench@")) == names
    folder = results / "runs" / run["run_id"]
    for op in run["operations"]:
        timeline = op["hosts"]["timeline"]
        assert sorted(timeline["hosts"]) == names and timeline["lost"] == {}
        assert timeline["to_wall"] - timeline["from_wall"] >= 3
        for where in timeline["hosts"].values():
            lines = (folder / where["csv"]).read_text().splitlines()
            assert lines[0].startswith("timestamp,elapsed_s,") and len(lines) > 4
    report = _run(["report", run["run_id"]], results, tmp_path)
    assert report.returncode == 0, report.stderr
    page = Path(report.stdout.strip()).read_text()
    for phase in ("active-full", "restore-random"):
        assert f'aria-label="Per-host timeline of {phase}: {", ".join(names)}"' in page
    assert list(target.iterdir()) == []


def test_run_hosts_refuses_a_host_whose_agent_is_down_by_name(hosts, tmp_path):
    token = token_file(tmp_path)
    hosts.start_agent(1, token)   # none on host 2
    target = tmp_path / "target"
    target.mkdir()
    done = _run([*_run_args(hosts, target), "--agent-token-file", str(token), *hosts.trust_args], tmp_path / "results",
                tmp_path)
    assert done.returncode == 3, done.stderr
    assert f"agent check failed: {hosts.addresses[2]}: agent {hosts.addresses[2]}:7480" in done.stderr
    assert hosts.addresses[1] + ":" not in done.stderr.split("agent check failed:")[1]
    assert list(target.iterdir()) == []


def test_hosts_check_checks_each_hosts_agent_over_tls_as_trusted(hosts, tmp_path):
    from tls_support import Authority

    token = token_file(tmp_path)
    hosts.start_agent(1, token)   # none on host 2
    names = ",".join(hosts.addresses.values())
    done = _run(["hosts", "check", names, "--json", "--agent-token-file", str(token), *hosts.trust_args],
                tmp_path / "results", tmp_path)
    assert done.returncode == 3, done.stderr
    agents = {row["host"]: row for row in json.loads(done.stdout)["agents"]}
    assert agents[hosts.addresses[1]]["reachable"] and agents[hosts.addresses[1]]["problem"] == ""
    assert not agents[hosts.addresses[2]]["reachable"] and agents[hosts.addresses[2]]["problem"]
    assert f"agents not usable: {hosts.addresses[2]} (" in done.stderr and hosts.addresses[1] + " (" not in done.stderr
    # Another CA than the one that signed the agent's certificate: not trusted, nothing sent.
    other = Authority(tmp_path, "other-ca")
    done = _run(["hosts", "check", hosts.addresses[1], "--agent-token-file", str(token), "--agent-ca", str(other.ca)],
                tmp_path / "results", tmp_path)
    assert done.returncode == 3 and "certificate not trusted" in done.stderr, done.stderr


def test_run_hosts_without_a_token_says_how_to_get_a_timeline(hosts, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    done = _run([*_run_args(hosts, target)], tmp_path / "results", tmp_path)
    assert done.returncode == 0, done.stderr
    run = _stored(tmp_path / "results")
    assert host_monitor.NO_TIMELINE_NOTE in run["notes"]
    assert all(op["hosts"]["timeline"] is None for op in run["operations"])


def test_an_agent_killed_mid_run_is_noted_and_the_run_completes(hosts, tmp_path):
    token = token_file(tmp_path)
    for n in (1, 2):
        hosts.start_agent(n, token)
    target, results = tmp_path / "target", tmp_path / "results"
    target.mkdir()
    args = _run_args(hosts, target)
    args[args.index("6s")] = "8s"
    child = start_cli([*args, "--agent-token-file", str(token), *hosts.trust_args], cwd=tmp_path, results=results)
    try:
        for _ in range(600):  # bounded: 60 s, until the first phase's job files are written
            if list(results.rglob("active-full.*.fio")):
                break
            time.sleep(0.1)
        time.sleep(2)
        hosts.agents[2].stop(signal.SIGKILL)
        _, err = child.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err
    run = _stored(results)
    lost = hosts.addresses[2]
    assert run["status"] == "complete"
    assert any(note.startswith(f"host {lost}: no more samples from its agent") for note in run["notes"])
    last = run["operations"][-1]["hosts"]["timeline"]
    assert lost in last["lost"] and hosts.addresses[1] in last["hosts"]
