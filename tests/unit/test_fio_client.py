"""fio's client/server mode: reading client_stats per host, hosts, argv, cleanup jobs.

Fixtures are real fio 3.33 output: client-server.json (one host, two jobs), client-two-hosts.json
(127.0.0.1 and 127.0.0.2, port 18765, one job each) and client-host-lost.json (the second host's
server killed mid-run: fio's message before the JSON, only the first host's entry in it), all
--output-format=json; client-two-hosts-jsonplus.json (as client-two-hosts.json, json+: latency
histograms) and client-ipv6-jsonplus.json (a server on ::1 port 18767, `--client=ip6:::1,18767`).
"""

import copy
import json
import re
from pathlib import Path, PurePosixPath

import pytest

from backupbench import artefacts
from backupbench.engines import fio_bins, fio_client
from backupbench.engines.fio_client import Host, parse_client_text, parse_clients, parse_hosts
from backupbench.errors import EngineError, InputError

TWO = (Host("127.0.0.1", 18765), Host("127.0.0.2", 18765))


def text(fixtures, name):
    return (fixtures / "fio" / name).read_text()


def data(fixtures, name):
    raw = text(fixtures, name)
    return json.loads(raw[raw.index("\n{") + 1:] if not raw.startswith("{") else raw)


def entries(raw, host):
    return [e for e in raw["client_stats"] if e["jobname"] != "All clients" and e["hostname"] == host]


def test_two_hosts_are_split_and_summed(fixtures):
    raw = data(fixtures, "client-two-hosts.json")
    result = parse_client_text(text(fixtures, "client-two-hosts.json"), TWO)
    first, second = (entries(raw, h.address)[0]["write"] for h in TWO)
    assert set(result.per_host) == {"127.0.0.1:18765", "127.0.0.2:18765"}
    assert result.per_host["127.0.0.1:18765"].write.bw_bytes == first["bw_bytes"]
    assert result.per_host["127.0.0.2:18765"].write.bw_bytes == second["bw_bytes"]
    assert result.total.write.bw_bytes == first["bw_bytes"] + second["bw_bytes"]
    assert result.total.write.iops == pytest.approx(first["iops"] + second["iops"])
    assert result.lost == {} and result.notes == ()


def test_without_histograms_the_total_p99_is_the_worst_hosts_never_an_average(fixtures):
    result = parse_client_text(text(fixtures, "client-two-hosts.json"), TWO)
    p99s = [s.write.p99_ns for s in result.per_host.values()]
    assert result.total.write.p99_ns == max(p99s)
    assert not result.total_p99_merged and result.total_percentiles() == {}


def test_with_histograms_the_total_p99_is_read_from_every_hosts_bins(fixtures):
    raw = data(fixtures, "client-two-hosts-jsonplus.json")
    result = parse_client_text(text(fixtures, "client-two-hosts-jsonplus.json"), TWO)
    own = {f"{h.address}:{h.port}": entries(raw, h.address)[0]["write"]["lat_ns"] for h in TWO}
    # Each host keeps fio's own figure; the total is the p99 of both hosts' I/O together.
    assert {name: s.write.p99_ns for name, s in result.per_host.items()} == {
        name: lat["percentile"]["99.000000"] for name, lat in own.items()}
    merged = fio_bins.merge(fio_bins.parse(lat["bins"]) for lat in own.values())
    assert result.total.write.p99_ns == fio_bins.percentile(merged, 99.0)
    assert result.total_p99_merged and result.total.read.p99_ns is None
    assert result.total_percentiles() == {"write": {f"p{p:g}": v for p, v in fio_bins.percentiles(merged).items()}}
    assert set(result.total_percentiles()["write"]) == {"p50", "p95", "p99", "p99.9"}


def test_the_all_clients_entry_is_not_counted(fixtures):
    raw = data(fixtures, "client-server.json")
    result = parse_clients(raw, (Host("127.0.0.1"),))
    jobs = [e for e in raw["client_stats"] if e["jobname"] != "All clients"]
    assert result.total.write.bw_bytes == sum(e["write"]["bw_bytes"] for e in jobs)
    assert result.total.read.bw_bytes == sum(e["read"]["bw_bytes"] for e in jobs)
    assert "All clients" not in result.total.job_names
    assert set(result.per_host) == {"127.0.0.1"}


def test_a_lost_host_is_named_and_left_out_of_the_total(fixtures):
    said = text(fixtures, "client-host-lost.json")
    result = parse_client_text(said, TWO)
    raw = data(fixtures, "client-host-lost.json")
    assert set(result.per_host) == {"127.0.0.1:18765"}
    assert result.lost == {"127.0.0.2:18765": "fio's client says the host disconnected"}
    assert result.total.write.bw_bytes == entries(raw, "127.0.0.1")[0]["write"]["bw_bytes"]


def test_a_host_missing_without_any_message_is_lost_too(fixtures):
    raw = data(fixtures, "client-two-hosts.json")
    raw["client_stats"] = [e for e in raw["client_stats"] if e["hostname"] != "127.0.0.2" or
                           e["jobname"] == "All clients"]
    result = parse_clients(raw, TWO)
    assert list(result.lost) == ["127.0.0.2:18765"] and "lost" in result.lost["127.0.0.2:18765"]


def test_no_hostname_is_attributed_only_when_one_host_is_unaccounted_for(fixtures):
    raw = data(fixtures, "client-two-hosts.json")
    for entry in raw["client_stats"]:
        if entry["hostname"] == "127.0.0.2":
            del entry["hostname"], entry["port"]
    result = parse_clients(raw, TWO)
    assert set(result.per_host) == {"127.0.0.1:18765", "127.0.0.2:18765"} and not result.lost
    assert "attributed to 127.0.0.2:18765" in result.notes[0]


def test_no_hostname_with_two_hosts_silent_counts_in_the_total_only(fixtures):
    raw = data(fixtures, "client-two-hosts.json")
    for entry in raw["client_stats"]:
        entry.pop("hostname")
    result = parse_clients(raw, TWO)
    jobs = [e for e in raw["client_stats"] if e["jobname"] != "All clients"]
    assert result.per_host == {} and set(result.lost) == {h.name for h in TWO}
    assert result.total.write.bw_bytes == sum(e["write"]["bw_bytes"] for e in jobs)
    assert "without a host name" in result.notes[0]


def test_a_failed_job_on_one_host_marks_that_host_only(fixtures):
    raw = data(fixtures, "client-two-hosts.json")
    entries(raw, "127.0.0.2")[0]["error"] = 28
    result = parse_clients(raw, TWO)
    assert set(result.per_host) == {"127.0.0.1:18765"}
    assert "error 28" in result.lost["127.0.0.2:18765"]


def test_no_host_at_all_is_an_error_naming_why(fixtures):
    raw = data(fixtures, "client-two-hosts.json")
    raw["client_stats"] = []
    with pytest.raises(EngineError, match="no host reported a result: 127.0.0.1:18765"):
        parse_clients(raw, TWO)
    with pytest.raises(EngineError, match="failed to connect"):
        parse_client_text("fio: failed to connect to 10.0.0.9:8765\n", TWO)


def test_a_port_tells_apart_two_servers_on_one_address(fixtures):
    raw = data(fixtures, "client-two-hosts.json")
    other = copy.deepcopy(entries(raw, "127.0.0.1")[0])
    other["port"] = 18766
    other["write"]["bw_bytes"] = 1
    raw["client_stats"].insert(0, other)
    hosts = (Host("127.0.0.1", 18765), Host("127.0.0.1", 18766), Host("127.0.0.2", 18765))
    result = parse_clients(raw, hosts)
    assert result.per_host["127.0.0.1:18766"].write.bw_bytes == 1
    assert result.per_host["127.0.0.1:18765"].write.bw_bytes > 1


def test_parse_hosts():
    assert parse_hosts("10.0.0.5, node-b:8766") == (Host("10.0.0.5", 8765), Host("node-b", 8766))
    assert Host("10.0.0.5").name == "10.0.0.5" and Host("h", 9000).name == "h:9000"
    for bad, said in (("", "not a host"), ("a,a:8765", "twice"), ("h:0", "valid port"), ("h:x", "valid port"),
                      ("-rf", "not a host"), ("a b", "not a host")):
        with pytest.raises(InputError, match=said):
            parse_hosts(bad)


def test_parse_hosts_takes_ipv6_in_brackets_or_bare_when_unambiguous():
    assert parse_hosts("[::1]:8766,[fd00::5],fd00::6,10.0.0.5") == (
        Host("::1", 8766), Host("fd00::5"), Host("fd00::6"), Host("10.0.0.5"))
    # One spelling per address: duplicates are found, fio is given the canonical text.
    assert parse_hosts("[FD00:0:0::05]:9000") == (Host("fd00::5", 9000),)
    with pytest.raises(InputError, match="twice"):
        parse_hosts("[fd00::5],fd00:0::5")
    assert parse_hosts("[fd00::5]:8766,[fd00::5]:8767") == (Host("fd00::5", 8766), Host("fd00::5", 8767))
    for bad, said in (("[::1]:0", "valid port"), ("[::1]:", "valid port"), ("[::1]x", "not an IPv6"),
                      ("[10.0.0.5]", "not an IPv6"), ("[nope]:8765", "not an IPv6"), ("fd00:::5", "not an IPv6"),
                      ("[fe80::1%eth0]", "zone"), ("fd00::5:8766", r"could be an IPv6 address or fd00::5 with port")):
        with pytest.raises(InputError, match=said):
            parse_hosts(bad)


def test_ipv6_hosts_are_named_bracketed_and_given_to_fio_as_ip6():
    default, other = Host("fd00::5"), Host("::1", 18767)
    assert (default.name, other.name) == ("[fd00::5]", "[::1]:18767")
    assert [parse_hosts(h.name)[0] for h in (default, other)] == [default, other]  # names read back
    assert other.client_arg == "--client=ip6:::1,18767" and other.server_arg == "--server=ip6:::1,18767"
    assert Host("10.0.0.5").client_arg == "--client=10.0.0.5,8765"
    assert Host("10.0.0.5").server_arg == "--server=ip:10.0.0.5,8765"
    assert other.file_tag == "__1-18767" and default.file_tag == "fd00__5-8765"
    tags = {h.file_tag for h in (default, other, Host("fd00::5", 9000), Host("fd00--5"), Host("10.0.0.5"))}
    assert len(tags) == 5 and all(re.fullmatch(r"[A-Za-z0-9._-]+", tag) for tag in tags)


def test_an_ipv6_hosts_result_is_matched_whatever_spelling_fio_repeats(fixtures):
    host = Host("::1", 18767)
    result = parse_client_text(text(fixtures, "client-ipv6-jsonplus.json"), (host,))
    raw = data(fixtures, "client-ipv6-jsonplus.json")
    assert set(result.per_host) == {"[::1]:18767"} and not result.notes
    assert result.per_host["[::1]:18767"].write.bw_bytes == entries(raw, "::1")[0]["write"]["bw_bytes"]
    for entry in raw["client_stats"]:
        entry["hostname"] = "0:0::0:1"  # fio repeats the text it was given, not a canonical form
    spelled = parse_clients(raw, (host, Host("::2", 18767)))
    assert set(spelled.per_host) == {"[::1]:18767"} and list(spelled.lost) == ["[::2]:18767"]


def test_a_lost_ipv6_host_is_named_from_fios_message(fixtures):
    said = "client: host=::1 disconnected\n"  # what fio 3.33 printed when the ::1 server was killed
    raw = data(fixtures, "client-ipv6-jsonplus.json")
    lost = Host("::1", 18768)
    result = parse_clients(raw, (Host("::1", 18767), lost), said)
    assert result.lost == {"[::1]:18768": "fio's client says the host disconnected"}


def test_remote_path_must_be_absolute_and_sayable():
    assert fio_client.remote_path("/srv/backups") == PurePosixPath("/srv/backups")
    with pytest.raises(InputError, match="absolute"):
        fio_client.remote_path("backups")
    with pytest.raises(InputError, match="comment"):
        fio_client.remote_path("/srv/a;b")


def test_client_argv_gives_each_host_its_job_file():
    argv = fio_client.client_argv("fio", [(TWO[0], Path("/r/a.fio")), (TWO[1], Path("/r/b.fio"))], Path("/r/o.json"))
    assert argv == ["fio", "--output-format=json+", "--output=/r/o.json",
                    "--client=127.0.0.1,18765", "/r/a.fio", "--client=127.0.0.2,18765", "/r/b.fio"]


def test_probe_line_gives_the_servers_version():
    line = "hostname=vm, be=0, 64-bit, os=Linux, arch=x86-64, fio=fio-3.33, flags=1\n<vm> probe: (g=0)\n"
    found = fio_client._PROBE.search(line)
    assert (found["name"], found["version"]) == ("vm", "fio-3.33")


def test_cleanup_job_unlinks_the_file_and_escapes_it():
    job = fio_client.cleanup_job(PurePosixPath("/srv/b:x/backupbench-r1-h.dat"))
    assert "filename=/srv/b\\:x/backupbench-r1-h.dat\n" in job and "unlink=1\n" in job and "rw=read\n" in job


def test_remote_file_remover_refuses_what_is_not_ours():
    entry = fio_client.remote_file(Host("127.0.0.1"), PurePosixPath("/srv/etc-passwd"), "r1")
    assert fio_client.remove_remote_file(entry, "r1").result == artefacts.NOT_OURS
    entry = fio_client.remote_file(Host("127.0.0.1"), PurePosixPath("/srv/backupbench-r1-h.dat"), "r1")
    assert fio_client.remove_remote_file(entry, "r2").result == artefacts.NOT_OURS


def test_the_remover_fails_saying_why_when_the_host_is_down():
    # Port 1 on loopback: nothing listens, so fio's client is refused at once.
    entry = fio_client.remote_file(Host("127.0.0.1", 1), PurePosixPath("/srv/backupbench-r1-127.0.0.1-1.dat"), "r1")
    outcome = artefacts.remove(entry, "r1", artefacts.removers({fio_client.REMOTE_FILE: fio_client.remove_remote_file}))
    assert outcome.result == artefacts.FAILED and "could not remove /srv/backupbench-r1-127.0.0.1-1.dat" in outcome.text


# ---- runner/hosts.py and `backupbench hosts unit`: the parts that need no server ----------------

def test_on_hosts_takes_fio_workloads_only_and_an_absolute_path():
    from backupbench.runner import hosts
    from backupbench.workloads.registry import WORKLOADS

    def built(name):
        definition = WORKLOADS[name]
        return definition.build(definition.options.model_validate(definition.options_from({})), None)

    on = hosts.on_hosts("first-write", built("first-write"), TWO, "/srv/backups")
    assert on.kind == "first-write" and on.needs_directory is False
    assert on.target_label(None) == "127.0.0.1:18765,127.0.0.2:18765:/srv/backups"
    assert on.settings()["hosts"] == ["127.0.0.1:18765", "127.0.0.2:18765"]
    assert on.phases() == ("first-write", "overwrite", "read")
    with pytest.raises(InputError, match="applies to --workload kb2014 or first-write, not smallfiles"):
        hosts.on_hosts("smallfiles", built("smallfiles"), TWO, "/srv")
    with pytest.raises(InputError, match="needs PATH"):
        hosts.on_hosts("kb2014", built("kb2014"), TWO, None)
    with pytest.raises(InputError, match="absolute"):
        hosts.on_hosts("kb2014", built("kb2014"), TWO, "relative")


def test_each_host_gets_its_own_test_file_and_a_bounded_phase():
    from backupbench.runner import hosts
    from backupbench.workloads import kb2014

    names = {fio_client.remote_test_file(PurePosixPath("/srv"), "r1", h).name for h in (*TWO, Host("fd00::5"))}
    assert names == {"backupbench-r1-127.0.0.1-18765.dat", "backupbench-r1-127.0.0.2-18765.dat",
                     "backupbench-r1-fd00__5-8765.dat"}
    options = kb2014.Kb2014Options(size=32 * 2**20, runtime=2.0, operations=("active-full", "restore-random"))
    phases = kb2014.workload(options).phases_for(Path("/srv/f.dat"))
    assert [p.job.name for p in phases] == ["layout", "active-full", "restore-random"]
    assert all(0 < hosts.phase_timeout(p) < 1000 for p in phases)
    # A timed phase's bound holds its ramp too (2 s by default) beyond the grace.
    assert hosts.phase_timeout(phases[1]) == 2.0 + 2.0 + hosts.PHASE_GRACE_S


def test_the_unit_binds_the_server_to_one_address():
    from backupbench.cli.hosts_cmd import server_unit

    unit = server_unit(Host("10.0.0.5"), "/usr/bin/fio", "root")
    assert "ExecStart=/usr/bin/fio --server=ip:10.0.0.5,8765\n" in unit and "Restart=always" in unit
    assert "no authentication" in unit and "run --hosts 10.0.0.5 PATH" in unit
    assert "run --hosts 10.0.0.5:9000 PATH" in server_unit(Host("10.0.0.5", 9000), "/usr/bin/fio", "root")


def test_the_unit_of_an_ipv6_server_uses_fios_ip6_syntax():
    from backupbench.cli.hosts_cmd import server_unit

    unit = server_unit(Host("fd00::5", 8766), "/usr/bin/fio", "root")
    assert "ExecStart=/usr/bin/fio --server=ip6:fd00::5,8766\n" in unit
    assert "run --hosts [fd00::5]:8766 PATH" in unit


def test_hosts_unit_command_takes_ipv6_and_refuses_a_port_in_the_address():
    from click.testing import CliRunner

    from backupbench.cli.hosts_cmd import unit_command

    done = CliRunner().invoke(unit_command, ["fd00::5", "--port", "8766"])
    assert done.exit_code == 0 and "--server=ip6:fd00::5,8766" in done.output
    assert CliRunner().invoke(unit_command, ["10.0.0.5:9000"]).exit_code != 0
    assert CliRunner().invoke(unit_command, ["[fd00::5]:9000"]).exit_code != 0
