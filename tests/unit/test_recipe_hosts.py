"""A recipe's [hosts] table: validated in the recipe with the flags' own checks, planned without
asking any host, refused (with the flags' messages) where `run --hosts` / `--agents` would refuse."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from backupbench.cli.recipe_cmds import plan_command
from backupbench.engines.fio_client import Host, parse_hosts, remote_path
from backupbench.errors import InputError, RecipeError
from backupbench.layouts.capabilities import HostCapabilities
from backupbench.plan import build
from backupbench.recipe import hosts as hosts_spec
from backupbench.recipe import model
from backupbench.runner import apply_hosts, host_monitor
from backupbench.runner.agents import on_agents, parse_agents
from backupbench.runner.hosts import HostsWorkload, on_hosts
from backupbench.workloads.registry import WORKLOADS

EXAMPLE = Path(__file__).parents[2] / "examples" / "hosts-kb2014.toml"
NOTHING = HostCapabilities(frozenset(), frozenset())
RUN_ID = "20261124T000000-hosts000"


def recipe(**hosts) -> dict:
    return {"name": "t", "hosts": {"names": ["10.0.0.5", "10.0.0.6:8766"], "path": "/srv/backup", **hosts},
            "workload": [{"kind": "kb2014", "size": "64MiB"}]}


def s3_recipe(token_file: str = "/etc/backupbench/agent-token", **s3) -> dict:
    data = recipe(agents=["10.0.0.5:7480", "10.0.0.6:7480"], agent_token_file=token_file)
    data["workload"].append({"kind": "s3", "endpoint": "http://10.0.0.9:9000", "bucket": "bench", **s3})
    return data


def refused(data: dict) -> str:
    with pytest.raises(RecipeError) as raised:
        model.parse(data)
    return raised.value.message


def cli_message(check, text: str) -> str:
    with pytest.raises(InputError) as raised:
        check(text)
    return raised.value.message


def test_a_hosts_recipe_needs_no_layout_and_names_its_hosts():
    parsed = model.parse(recipe())
    assert parsed.layout == () and parsed.devices == ()
    assert parsed.hosts.hosts() == (Host("10.0.0.5", 8765), Host("10.0.0.6", 8766))
    assert parsed.hosts.path == "/srv/backup"
    example = model.load(EXAMPLE)
    assert example.hosts.names == ("10.0.0.5", "10.0.0.6") and example.workload[0].kind == "kb2014"


def test_layouts_and_hosts_together_are_refused_naming_the_fix():
    data = recipe()
    data["devices"] = ["/dev/vdb"]
    data["layout"] = [{"name": "d", "kind": "directory", "path": "/srv"}]
    assert "[hosts] and [[layout]] do not go together" in refused(data)
    assert "remove one" in refused(data)
    del data["layout"]
    assert "[hosts] formats nothing: remove devices" in refused(data)


def test_a_recipe_with_neither_layouts_nor_hosts_is_refused():
    data = recipe()
    del data["hosts"]
    assert "no [[layout]]: a recipe builds at least one, or runs on other machines ([hosts])" in refused(data)


@pytest.mark.parametrize("bad", ["bad host", "10.0.0.5:99999", "-x"])
def test_a_bad_host_gets_the_message_of_hosts_flag(bad):
    expected = cli_message(parse_hosts, bad).removeprefix("--hosts: ")
    message = refused(recipe(names=["10.0.0.5", bad]))
    assert message == f"recipe: hosts.names[1]: {expected}"


def test_a_host_named_twice_or_two_in_one_entry_is_refused():
    assert "names 10.0.0.5 twice" in refused(recipe(names=["10.0.0.5", "10.0.0.5:8765"]))
    assert "hosts.names[0]: '10.0.0.5,10.0.0.6' names 2 hosts; give one per entry" in refused(
        recipe(names=["10.0.0.5,10.0.0.6"]))


def test_the_path_gets_the_message_of_run_hosts_path():
    for bad in ("srv/backup", "/srv/$backup"):
        expected = cli_message(remote_path, bad)
        assert refused(recipe(path=bad)) == f"recipe: hosts.path: {expected}"
    data = recipe()
    del data["hosts"]["path"]
    assert "[hosts] with names needs path" in refused(data)


@pytest.mark.parametrize("where,key,suggested", [
    ("hosts", "nmaes", "names"), ("hosts", "agent_token", "agent_token_file"), ("top", "host", "hosts")])
def test_a_typo_gets_a_suggestion(where, key, suggested):
    data = recipe()
    if where == "hosts":
        data["hosts"][key] = data["hosts"].pop("names") if key == "nmaes" else "/t"
    else:
        data[key] = data.pop("hosts")
    prefix = f"hosts.{key}" if where == "hosts" else key
    assert f"{prefix}: is not a known key; did you mean {suggested!r}?" in refused(data)


def test_s3_needs_agents_a_token_file_and_an_endpoint():
    data = s3_recipe()
    del data["hosts"]["agents"], data["hosts"]["agent_token_file"]
    assert "workload[1]: s3 runs from backupbench agents: give [hosts] agents and agent_token_file" in refused(data)
    data = s3_recipe()
    del data["hosts"]["agent_token_file"]
    assert "[hosts] with agents needs agent_token_file" in refused(data)
    data = s3_recipe()
    del data["workload"][1]["endpoint"]
    assert "workload[1]: s3 on [hosts] needs endpoint" in refused(data)
    assert "hosts.agent_token_file: must be an absolute path" in refused(s3_recipe(token_file="token"))
    assert "hosts.agents[0]: '10.0.0.5:7480,10.0.0.6:7480' names several agents" in refused(
        {**recipe(), "hosts": {**s3_recipe()["hosts"], "agents": ["10.0.0.5:7480,10.0.0.6:7480"]}})


def test_workloads_other_machines_cannot_run_are_refused_with_the_reason():
    data = recipe()
    data["workload"] = [{"kind": "smallfiles", "preset": "quick"}]
    assert ("workload[0]: smallfiles cannot run on [hosts]: only kb2014, first-write, s3 run on other machines"
            in refused(data))
    agents_only = s3_recipe()
    del agents_only["hosts"]["names"], agents_only["hosts"]["path"]
    assert "workload[0]: kb2014 runs on fio servers: give [hosts] names and path" in refused(agents_only)


def test_where_a_workload_runs_is_what_its_definition_declares(tmp_path):
    """run --hosts, run --agents and a recipe's [hosts] ask the same declaration."""
    token = tmp_path / "token"
    token.write_text("0123456789abcdef0123\n")
    on_servers, from_agents = [], []
    for name, definition in WORKLOADS.items():
        entry = {"kind": name, "endpoint": "http://10.0.0.9:9000", "bucket": "bench"} if name == "s3" else {"kind": name}
        built = definition.build(definition.recipe_entry.model_validate(entry), None)
        try:
            on_hosts(name, built, parse_hosts("10.0.0.5"), "/srv/backup")
            on_servers.append(name)
        except InputError as exc:
            assert "--hosts applies to --workload kb2014 or first-write" in exc.message
        try:
            on_agents(name, built, "10.0.0.5:7480", token)
            from_agents.append(name)
        except InputError as exc:
            assert f"--agents applies to --workload s3, not {name}" in exc.message
        refusal = hosts_spec.workload_refusal(definition.recipe_entry.model_validate(entry),
                                              model.parse(s3_recipe()).hosts)
        assert (refusal == "") == (name in ("kb2014", "first-write", "s3")), (name, refusal)
    assert on_servers == ["kb2014", "first-write"] and from_agents == ["s3"]
    assert [n for n, d in WORKLOADS.items() if d.capabilities.fio_servers] == on_servers
    assert [n for n, d in WORKLOADS.items() if d.capabilities.agents] == from_agents


def test_the_plan_says_what_runs_where_and_asks_no_host():
    parsed = model.parse(s3_recipe())
    plan = build(parsed, RUN_ID, NOTHING, lambda device: pytest.fail(f"asked about {device}"))
    assert plan.steps == [] and plan.refusals == []
    fio, s3 = plan.remote
    assert (fio.group, fio.machines, fio.through) == ("1-kb2014", ("10.0.0.5", "10.0.0.6:8766"), "fio servers")
    assert fio.phases[0] == "layout" and "/srv/backup on every host" in fio.works_on
    assert (s3.group, s3.machines, s3.phases) == ("2-s3", ("10.0.0.5:7480", "10.0.0.6:7480"), ("put", "get", "delete"))
    assert "bucket bench at http://10.0.0.9:9000" in s3.works_on
    only = build(model.parse(recipe()), RUN_ID, NOTHING, lambda device: [])
    assert only.remote[0].group == ""  # named as `run --hosts` names them


def test_agent_refusals_come_from_run_agents_checks(tmp_path):
    token = tmp_path / "token"
    token.write_text("0123456789abcdef0123\n")
    token.chmod(0o600)   # the fio hosts' agents read it as run --hosts does: no one else may
    good = model.parse(s3_recipe(str(token)))
    assert apply_hosts.refusals(good) == []
    bad_agent = s3_recipe(str(token))
    bad_agent["hosts"]["agents"] = ["10.0.0.5:7480", "nowhere"]
    expected = cli_message(parse_agents, "nowhere")
    assert [expected in line for line in apply_hosts.refusals(model.parse(bad_agent))] == [True]
    unsupported = apply_hosts.refusals(model.parse(s3_recipe(str(token), duration="10s")))
    assert len(unsupported) == 1 and unsupported[0].startswith("workload[1] (s3): --duration does not apply")
    missing = apply_hosts.refusals(model.parse(s3_recipe(str(tmp_path / "absent"))))
    assert len(missing) == 2
    assert missing[0].startswith("workload[0] (kb2014): token file ") and "does not exist" in missing[0]
    assert missing[1].startswith("workload[1] (s3): ") and "No such file or directory" in missing[1]
    plan = build(model.parse(s3_recipe(str(tmp_path / "absent"))), RUN_ID, NOTHING, lambda device: [],
                 remote_check=apply_hosts.refusals)
    assert plan.refusals == [f"hosts: {line}" for line in missing]


def _private_token(folder: Path) -> Path:
    path = folder / "agent-token"
    path.write_text("0123456789abcdef0123456789abcdef\n")
    path.chmod(0o600)
    return path


def test_a_token_file_makes_the_fio_hosts_agents_checked_and_sampled_as_run_hosts_does(tmp_path):
    token = _private_token(tmp_path)
    for port, expected in ((None, hosts_spec.AGENT_PORT), (7481, 7481)):
        extra = {"agent_token_file": str(token)} | ({"agent_port": port} if port else {})
        job = apply_hosts._job(model.parse(recipe(**extra)), model.parse(recipe(**extra)).hosts, 0)
        assert isinstance(job.workload, HostsWorkload)
        assert {name: (client.host, client.port) for name, client in job.workload.agents.items()} == {
            "10.0.0.5": ("10.0.0.5", expected), "10.0.0.6:8766": ("10.0.0.6", expected)}
        assert job.machines == "fio servers 10.0.0.5, 10.0.0.6:8766 and their agents"
        assert not any("per-host timeline" in note for note in job.workload.notes)


def test_without_a_token_file_the_run_notes_say_how_to_get_a_timeline():
    parsed = model.parse(recipe())
    job = apply_hosts._job(parsed, parsed.hosts, 0)
    assert job.workload.agents == {} and job.machines == "fio servers 10.0.0.5, 10.0.0.6:8766"
    assert job.workload.notes == [host_monitor.NO_TIMELINE_NOTE_RECIPE]
    assert "agent_token_file = F to the recipe's [hosts]" in host_monitor.NO_TIMELINE_NOTE_RECIPE


def test_a_token_file_others_may_read_refuses_the_fio_workload_before_any_host_is_asked(tmp_path):
    token = _private_token(tmp_path)
    token.chmod(0o644)
    [line] = apply_hosts.refusals(model.parse(recipe(agent_token_file=str(token))))
    assert line.startswith("workload[0] (kb2014): token file ") and "others may read it" in line


def test_agent_port_is_checked_in_one_line_and_only_where_it_applies():
    assert str(hosts_spec.AGENT_PORT) in hosts_spec.HostsSpec.model_fields["agent_port"].description
    for bad in (0, 65536, "7481", True, 7480.5):
        message = refused(recipe(agent_token_file="/etc/backupbench/agent-token", agent_port=bad))
        assert message.startswith("recipe: hosts.agent_port: ") and "\n" not in message, message
    without_token = refused(recipe(agent_port=7481))
    assert "agent_port applies to names with agent_token_file" in without_token and "\n" not in without_token
    agents_only = s3_recipe()
    del agents_only["hosts"]["names"], agents_only["hosts"]["path"]
    agents_only["workload"] = agents_only["workload"][1:]
    assert "agent_port applies to names" in refused({**agents_only,
                                                     "hosts": {**agents_only["hosts"], "agent_port": 7481}})


def test_the_examples_commented_agent_keys_are_real_keys():
    text = EXAMPLE.read_text()
    for key in ("agent_token_file", "agent_port", "agents"):
        assert f"\n# {key} = " in text, key
        text = text.replace(f"\n# {key} = ", f"\n{key} = ")
    parsed = model.parse(tomllib.loads(text))
    assert parsed.hosts.agent_token_file == "/etc/backupbench/agent-token"
    assert parsed.hosts.host_agent_port() == hosts_spec.AGENT_PORT


@pytest.fixture
def cli():
    group = click.Group()
    group.add_command(plan_command)
    return group


def test_plan_prints_each_workload_with_its_hosts(cli, tmp_path):
    result = CliRunner().invoke(cli, ["plan", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert "1. kb2014 on 2 fio servers: 10.0.0.5, 10.0.0.6" in result.output
    assert "/srv/backup on every host" in result.output and "backupbench apply RECIPE" in result.output
    assert "REFUSED" not in result.output and "mkfs" not in result.output
    as_json = CliRunner().invoke(cli, ["plan", str(EXAMPLE), "--json"])
    assert json.loads(as_json.output)["hosts"][0]["machines"] == ["10.0.0.5", "10.0.0.6"]


def test_plan_exits_3_naming_what_agents_refuse(cli, tmp_path):
    data = s3_recipe(str(tmp_path / "absent"))
    path = tmp_path / "recipe.toml"
    path.write_text(_toml(data))
    result = CliRunner().invoke(cli, ["plan", str(path)])
    assert result.exit_code == 3, result.output
    assert "2. s3 from 2 backupbench agents: 10.0.0.5:7480, 10.0.0.6:7480" in result.output
    assert "REFUSED: hosts: workload[1] (s3): --agent-token-file" in result.output


def _toml(data: dict) -> str:
    """The few shapes these recipes use, written as TOML (and read back to prove it)."""
    data = copy.deepcopy(data)
    lines = [f"name = {json.dumps(data.pop('name'))}", "[hosts]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in data.pop("hosts").items()]
    for entry in data.pop("workload"):
        lines += ["[[workload]]", *(f"{key} = {json.dumps(value)}" for key, value in entry.items())]
    text = "\n".join(lines) + "\n"
    assert tomllib.loads(text)["hosts"]["agents"] == ["10.0.0.5:7480", "10.0.0.6:7480"]
    return text


def test_the_lab_refuses_a_hosts_recipe_before_booting(tmp_path):
    from backupbench.cli.lab_cmd import _guest_job

    example = Path(__file__).resolve().parents[2] / "examples" / "hosts-kb2014.toml"
    with pytest.raises(InputError, match=r"runs on \[hosts\].*lab VM") as caught:
        _guest_job(example, None, tmp_path)
    assert "backupbench apply" in caught.value.fix


def test_the_agents_trust_keys_are_the_flags_and_apply_with_a_token_file(tmp_path):
    from backupbench.agent.tls import CA, FINGERPRINT, PLAIN, SYSTEM
    from tls_support import Authority

    token = _private_token(tmp_path)
    ca = Authority(tmp_path).ca
    pin = "sha256:" + "ab" * 32
    for keys, mode in (({}, SYSTEM), ({"agent_ca": str(ca)}, CA), ({"agent_fingerprints": [pin]}, FINGERPRINT),
                       ({"agent_insecure_plain_http": True}, PLAIN)):
        parsed = model.parse(s3_recipe(str(token)) | {"hosts": {**s3_recipe(str(token))["hosts"], **keys}})
        assert apply_hosts.refusals(parsed) == []
        for index in (0, 1):   # the fio hosts' agents and the s3 workload's agents alike
            job = apply_hosts._job(parsed, parsed.hosts, index)
            clients = job.workload.agents.values() if index == 0 else [job.workload.client(job.workload.agents[0])]
            assert {client.trust.mode for client in clients} == {mode}
    assert "agent_ca applies with agent_token_file" in refused(recipe(agent_ca=str(ca)))
    assert "agent_insecure_plain_http applies with agent_token_file" in refused(recipe(agent_insecure_plain_http=True))
    assert "agent_ca and agent_insecure_plain_http do not go together" in refused(
        recipe(agent_token_file=str(token), agent_ca=str(ca), agent_insecure_plain_http=True))
    assert "hosts.agent_ca: must be an absolute path" in refused(recipe(agent_token_file=str(token), agent_ca="ca.pem"))
    assert "hosts.agent_insecure_plain_http" in refused(recipe(agent_token_file=str(token),
                                                              agent_insecure_plain_http="yes"))
    # A fingerprint's form is checked where the flag's is (a later stage), before anything runs:
    bad = model.parse(recipe(agent_token_file=str(token), agent_fingerprints=["sha256:12"]))
    assert apply_hosts.refusals(bad) == ["workload[0] (kb2014): agent_fingerprints 'sha256:12' is not "
                                         "sha256:<64 hex digits> (copy it from the agent's start line (backupbench "
                                         "agent ... prints it), or run openssl x509 -in CERT -noout -fingerprint "
                                         "-sha256)"]
