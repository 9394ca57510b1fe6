"""`backupbench apply` of a recipe with [hosts], for real: two fio servers, each in a network
namespace of its own on a bridge this test makes (10.231.X.1 here, 10.231.X.N+1 there), no
mocks.

The setup is tests/netns_support.py's `netns.with_fio`, as in test_hosts_fio.py; the tests of
agent_token_file also start a `backupbench agent` beside a server (`start_agent`). The
namespaces share this machine's mount namespace: both servers write their test files into the
test's own directory, which must be empty at the end. Every namespace, veth pair, server and
agent is removed by the fixture, even on failure.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backupbench import __version__
from backupbench.results.store import Store
from host_support import CliResult, run_cli
from netns_support import token_file

pytestmark = pytest.mark.root
PORT = 8765
# Not the agent's default: the recipe's agent_port is what finds them.
AGENT_PORT = 7491
RUN_TIMEOUT_S = 240


@pytest.fixture
def servers(netns):
    return netns.with_fio(2)


def _cli(args: list[str], results: Path, cwd: Path) -> CliResult:
    return run_cli(args, cwd=cwd, results=results, timeout=RUN_TIMEOUT_S)


def _recipe(tmp_path: Path, names: list[str], target: Path, first_write: bool = True, runtime: str = "1s",
            **hosts: object) -> Path:
    """kb2014 (two phases, tiny) and first-write, one after the other, on `names`; `hosts`: more
    keys of [hosts]."""
    recipe = tmp_path / "hosts.toml"
    recipe.write_text(
        'name = "hosts-test"\n'
        f"[hosts]\nnames = {json.dumps(names)}\npath = {json.dumps(str(target))}\n"
        + "".join(f"{key} = {json.dumps(value)}\n" for key, value in hosts.items())
        + '[[workload]]\nkind = "kb2014"\noperations = ["active-full", "restore-random"]\nsize = "16MiB"\n'
        f'runtime = "{runtime}"\n'
        + ('[[workload]]\nkind = "first-write"\nsize = "8MiB"\n' if first_write else ""))
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
        per_host = ops[name].hosts.per_host
        assert set(per_host) == set(hosts) and ops[name].hosts.lost == {}
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


def _with_agents(servers, tmp_path, **recipe_keys):
    """Agents on hosts 1 and 2 with one token, an empty target and a [hosts] recipe naming them
    (recipe_keys as _recipe takes them): (target, results folder, recipe, the hosts' names)."""
    token = token_file(tmp_path)
    for n in (1, 2):
        servers.start_agent(n, token, AGENT_PORT)
    target, results = tmp_path / "target", tmp_path / "results"
    target.mkdir()
    names = [servers.addresses[1], servers.addresses[2]]
    recipe = _recipe(tmp_path, names, target, agent_token_file=str(token), agent_ca=str(servers.authority.ca),
                     agent_port=AGENT_PORT, **recipe_keys)
    return target, results, recipe, names


def test_apply_with_agent_token_file_checks_and_samples_each_hosts_agent(servers, tmp_path):
    target, results, recipe, names = _with_agents(servers, tmp_path, first_write=False, runtime="3s")
    done = _cli(["apply", str(recipe), "--quiet"], results, tmp_path)
    assert done.returncode == 0, done.stderr
    [run] = _stored_runs(results)
    assert run.status == "complete"
    assert [run.host.get(f"backupbench@{name}") for name in names] == [__version__] * 2   # both agents checked
    assert not any("per-host timeline" in note or "no more samples" in note for note in run.notes), run.notes
    folder = results / "runs" / run.run_id
    assert [op.name for op in run.operations] == ["active-full", "restore-random"]
    for op in run.operations:
        timeline = op.hosts.timeline
        assert sorted(timeline["hosts"]) == sorted(names) and timeline["lost"] == {}
        assert timeline["to_wall"] - timeline["from_wall"] >= 3
        for name, where in timeline["hosts"].items():
            assert where["csv"] == f"monitor.{name}.csv" and where["disks"]
            lines = (folder / where["csv"]).read_text().splitlines()
            assert lines[0].startswith("timestamp,elapsed_s,") and len(lines) > 4
    report = _cli(["report", run.run_id], results, tmp_path)
    assert report.returncode == 0, report.stderr
    page = Path(report.stdout.strip()).read_text()
    for phase in ("active-full", "restore-random"):
        assert f'aria-label="Per-host timeline of {phase}: {", ".join(names)}"' in page
    assert list(target.iterdir()) == []


def test_apply_refuses_by_name_a_host_whose_agent_is_down_before_anything_runs(servers, tmp_path):
    token = token_file(tmp_path)
    servers.start_agent(1, token, AGENT_PORT)   # none on host 2
    target, results = tmp_path / "target", tmp_path / "results"
    target.mkdir()
    recipe = _recipe(tmp_path, [servers.addresses[1], servers.addresses[2]], target, first_write=False,
                     agent_token_file=str(token), agent_ca=str(servers.authority.ca), agent_port=AGENT_PORT)
    done = _cli(["apply", str(recipe), "--quiet"], results, tmp_path)
    assert done.returncode == 3, done.stderr
    down = servers.addresses[2]
    assert f"agent check failed: {down}: agent {down}:{AGENT_PORT}" in done.stderr
    assert servers.addresses[1] + ":" not in done.stderr.split("agent check failed:")[1]
    assert list(target.iterdir()) == [] and _stored_runs(results) == []


def test_a_recipe_with_two_workloads_samples_the_agents_in_each(servers, tmp_path):
    target, results, recipe, names = _with_agents(servers, tmp_path, runtime="3s")
    done = _cli(["apply", str(recipe), "--quiet"], results, tmp_path)
    assert done.returncode == 0, done.stderr
    [run] = _stored_runs(results)
    folder = results / "runs" / run.run_id
    for op in run.operations:
        group = op.name.split("/")[0]
        timeline = op.hosts.timeline
        assert sorted(timeline["hosts"]) == sorted(names) and timeline["lost"] == {}
        for where in timeline["hosts"].values():
            assert (folder / group / where["csv"]).read_text().startswith("timestamp,elapsed_s,")
    report = _cli(["report", run.run_id], results, tmp_path)
    assert report.returncode == 0, report.stderr
    page = Path(report.stdout.strip()).read_text()
    # kb2014's phases run 3 s, long enough for samples in each; first-write's may be shorter than one.
    timed = [op.name for op in run.operations if op.name.startswith("1-kb2014/")]
    drawn = [name for name in timed if f'aria-label="Per-host timeline of {name}: ' in page]
    assert timed and drawn == timed, f"of {timed}, timelines drawn only for {drawn}"


def test_a_hosts_recipe_with_repeat_keeps_each_samples_hosts_and_judges_them_over_the_samples(servers, tmp_path):
    """`repeat = 2` on a [hosts] recipe's workload: its phases stored with 2 samples each, each
    host's figure the median of its samples, the hosts' verdict over them, and each sample's
    per-host CSV found where the report looks (the workload's group folder)."""
    target, results, recipe, names = _with_agents(servers, tmp_path)
    recipe.write_text(recipe.read_text().replace('runtime = "1s"\n', 'runtime = "1s"\nrepeat = 2\n', 1))
    done = _cli(["apply", str(recipe), "--quiet"], results, tmp_path)
    assert done.returncode == 0, done.stderr
    [run] = _stored_runs(results)
    folder = results / "runs" / run.run_id
    ops = {op.name: op for op in run.operations}
    for name in ("1-kb2014/active-full", "1-kb2014/restore-random"):
        op = ops[name]
        assert op.sample_count == 2 and len(op.sample_values("effective_bw")) == 2, name
        assert [sorted(sample) for sample in op.hosts.samples] == [sorted(names)] * 2
        for host in names:
            own = [sample[host]["effective_bw"] for sample in op.hosts.samples]
            assert op.hosts.per_host[host]["effective_bw"] == pytest.approx(sum(own) / 2), (name, host)
        for where in op.hosts.timeline["hosts"].values():
            assert where["csv"].startswith("sample-2/")
            assert (folder / "1-kb2014" / where["csv"]).read_text().startswith("timestamp,elapsed_s,")
    # first-write has no `repeat`: one sample, as before.
    assert ops["2-first-write/first-write"].sample_count == 1
    assert len(ops["2-first-write/first-write"].hosts.samples) == 1
    shown = _cli(["show", run.run_id], results, tmp_path)
    assert shown.returncode == 0, shown.stderr
    flat = " ".join(shown.stdout.split())
    assert "each host: the median of its 2 samples, judged over all of them" in flat
    assert "1-kb2014/active-full: two hosts cannot name an outlier" in flat
    kb2014_notes = [line for line in flat.split("note: ") if line.startswith("1-kb2014/")]
    assert kb2014_notes and not any("on one sample" in line for line in kb2014_notes), kb2014_notes
    report = _cli(["report", run.run_id], results, tmp_path)
    assert report.returncode == 0, report.stderr
    assert "not readable" not in Path(report.stdout.strip()).read_text()
    assert list(target.iterdir()) == []
