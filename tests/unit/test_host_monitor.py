"""runner/host_monitor.py's parts that need no running agent: the hosts' agent clients and their
addresses, file tags, a host's line from fake monitor answers passed in as the feed's client, and
the `hosts agent-unit` and `run` agent flags as the CLI takes or refuses them (called in-process).
Against real `backupbench agent` processes sampling for seconds:
tests/integration/test_host_monitor_agents.py."""

from __future__ import annotations

import pytest

from backupbench.agent.client import split_address
from backupbench.cli.app import main
from backupbench.engines.fio_client import Host
from backupbench.errors import InputError, RefusedError
from backupbench.runner import host_monitor
from host_support import CliResult
from monitor_support import RecordedHooks
from netns_support import token_file


@pytest.fixture
def cli(tmp_path, capsys, monkeypatch):
    """backupbench's command line called in-process (cli/app.main with argv: the exit code back,
    not sys.exit), its stdout and stderr as a user sees them; results under tmp_path."""
    monkeypatch.setenv("BACKUPBENCH_RESULTS", str(tmp_path / "results"))
    monkeypatch.chdir(tmp_path)

    def invoke(*args: str) -> CliResult:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return CliResult(code, out, err)
    return invoke


def test_without_agents_the_hooks_pass_through_untouched(tmp_path):
    hooks = RecordedHooks()
    with host_monitor.sampling({}, tmp_path, hooks, []) as given:
        assert given is hooks
    assert list(tmp_path.iterdir()) == []


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


def test_fio_servers_sharing_an_address_share_one_agent_feed(tmp_path):
    hosts = (Host("10.0.0.5"), Host("10.0.0.5", 8766), Host("fd00::5", 8770), Host("fd00:0::5", 8771),
             Host("Backup-2.lan", 8765), Host("backup-2.lan", 8766), Host("10.0.0.6", 8766))
    clients = host_monitor.host_agents(hosts, token_file(tmp_path), 7481)
    # One per machine, named by its address; a server alone on its address keeps its own name.
    assert {name: (c.host, c.port) for name, c in clients.items()} == {
        "10.0.0.5": ("10.0.0.5", 7481), "[fd00::5]": ("fd00::5", 7481), "Backup-2.lan": ("Backup-2.lan", 7481),
        "10.0.0.6:8766": ("10.0.0.6", 7481)}


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
