import json

import pytest

from backupbench.engines import fio_bins, fio_json
from backupbench.errors import EngineError


def load(fixtures, name):
    return json.loads((fixtures / "fio" / name).read_text())


def test_sequential_write(fixtures):
    raw = load(fixtures, "seqwrite.json")
    job = raw["jobs"][0]
    summary = fio_json.parse(raw)
    assert summary.write.bw_bytes == job["write"]["bw_bytes"]
    assert summary.write.iops == job["write"]["iops"]
    assert summary.write.p99_ns == job["write"]["clat_ns"]["percentile"]["99.000000"]
    assert summary.read.bw_bytes == 0 and summary.read.p99_ns is None
    assert summary.fio_version == "fio-3.33"


def test_mixed_pattern_has_both_directions(fixtures):
    raw = load(fixtures, "randrw67.json")
    summary = fio_json.parse(raw)
    assert summary.read.bw_bytes == raw["jobs"][0]["read"]["bw_bytes"] > 0
    assert summary.write.bw_bytes == raw["jobs"][0]["write"]["bw_bytes"] > summary.read.bw_bytes


def test_client_server_uses_clients_not_the_all_clients_double_count(fixtures):
    raw = load(fixtures, "client-server.json")
    clients = {c["jobname"]: c for c in raw["client_stats"]}
    summary = fio_json.parse(raw)
    expected_write = clients["cs-seqwrite"]["write"]["bw_bytes"] + clients["cs-randread"]["write"]["bw_bytes"]
    assert summary.write.bw_bytes == expected_write == clients["All clients"]["write"]["bw_bytes"]
    assert summary.read.bw_bytes == clients["All clients"]["read"]["bw_bytes"]
    assert set(summary.per_host) == {"127.0.0.1"}
    assert summary.per_host["127.0.0.1"].write.bw_bytes == expected_write
    assert "All clients" not in summary.job_names
    # The aggregate entry has no percentiles; the worst client's p99 stands for the whole.
    assert summary.write.p99_ns == clients["cs-seqwrite"]["write"]["clat_ns"]["percentile"]["99.000000"]


def test_two_servers_on_one_machine_are_two_hosts_by_their_ports(fixtures):
    raw = load(fixtures, "client-server.json")
    entries = [c for c in raw["client_stats"] if c["jobname"] != "All clients"]
    first, second = ({**entry, "hostname": "::1", "port": port} for entry, port in zip(entries, (8765, 8766)))
    summary = fio_json.parse({**raw, "client_stats": [first, second]})
    assert set(summary.per_host) == {"::1:8765", "::1:8766"}
    assert summary.per_host["::1:8766"].write.bw_bytes == second["write"]["bw_bytes"]


def test_several_jobs_add_up_and_keep_worst_p99_without_histograms(fixtures):
    raw = load(fixtures, "randread.json")  # plain json: no bins to merge
    second = json.loads(json.dumps(raw["jobs"][0]))
    second["read"]["clat_ns"]["percentile"]["99.000000"] = 123_456_789
    raw["jobs"].append(second)
    summary = fio_json.parse(raw)
    assert summary.read.bw_bytes == pytest.approx(2 * raw["jobs"][0]["read"]["bw_bytes"])
    assert summary.read.p99_ns == 123_456_789


def test_text_with_leading_warnings(fixtures):
    text = "fio: something noisy\n" + (fixtures / "fio" / "seqread.json").read_text()
    assert fio_json.parse_text(text).read.bw_bytes > 0


def test_job_error_and_garbage_raise(fixtures):
    raw = load(fixtures, "seqread.json")
    raw["jobs"][0]["error"] = 5
    with pytest.raises(EngineError, match="error 5"):
        fio_json.parse(raw)
    with pytest.raises(EngineError):
        fio_json.parse_text("no json here")
    with pytest.raises(EngineError):
        fio_json.parse({"fio version": "x"})


def test_total_latency_percentiles_win_over_completion_latency(fixtures):
    raw = load(fixtures, "seqwrite.json")
    write = raw["jobs"][0]["write"]
    write["lat_ns"]["percentile"] = {"99.000000": 4_292_608}
    assert fio_json.parse(raw).write.p99_ns == 4_292_608


# ---- json+ (latency histograms) -------------------------------------------------------------

def jsonplus(fixtures, name):
    text = (fixtures / "fio" / name).read_text()
    return json.JSONDecoder().raw_decode(text, text.index("{"))[0]


def test_jsonplus_keeps_each_directions_histogram_and_its_kind(fixtures):
    raw = jsonplus(fixtures, "client-jsonplus-clat.json")
    jobs = {e["jobname"]: e for e in raw["client_stats"]}
    reading = fio_json.parse({"fio version": "fio-3.33", "jobs": [jobs["cs-randread"]]})
    assert reading.read.bins == fio_bins.parse(jobs["cs-randread"]["read"]["clat_ns"]["bins"])
    assert reading.read.bins_of == "clat_ns" and reading.write.bins is None
    assert reading.read.percentiles() == {p: jobs["cs-randread"]["read"]["clat_ns"]["percentile"][f"{p:f}"]
                                          for p in fio_bins.REPORTED}
    raw = jsonplus(fixtures, "client-two-hosts-jsonplus.json")
    one = fio_json.parse({"fio version": "fio-3.33", "jobs": raw["client_stats"][:1]})
    assert one.write.bins_of == "lat_ns"  # lat_percentiles=1: total latency, as backupbench asks
    assert one.write.p99_ns == raw["client_stats"][0]["write"]["lat_ns"]["percentile"]["99.000000"]


def test_two_jobs_with_histograms_give_the_p99_of_their_sum(fixtures):
    raw = jsonplus(fixtures, "client-two-hosts-jsonplus.json")
    jobs = [e for e in raw["client_stats"] if e["jobname"] != "All clients"]
    summary = fio_json.parse({"fio version": "fio-3.33", "jobs": jobs})
    merged = fio_bins.merge(fio_bins.parse(e["write"]["lat_ns"]["bins"]) for e in jobs)
    assert summary.write.bins == merged and summary.write.bins_of == "lat_ns"
    assert summary.write.p99_ns == fio_bins.percentile(merged, 99.0)


def test_jobs_reading_and_jobs_writing_merge_only_what_they_measured(fixtures):
    # One job reads, the other writes: each direction has one measured part, fio's own figure.
    raw = jsonplus(fixtures, "client-jsonplus-clat.json")
    jobs = {e["jobname"]: e for e in raw["client_stats"]}
    summary = fio_json.parse(raw)
    assert summary.read.p99_ns == jobs["cs-randread"]["read"]["clat_ns"]["percentile"]["99.000000"]
    assert summary.write.p99_ns == jobs["cs-seqwrite"]["write"]["clat_ns"]["percentile"]["99.000000"]
    assert summary.read.bins is not None and summary.write.bins is not None


def test_without_every_histogram_the_worst_jobs_p99_stands(fixtures):
    raw = jsonplus(fixtures, "client-two-hosts-jsonplus.json")
    jobs = [e for e in raw["client_stats"] if e["jobname"] != "All clients"]
    del jobs[1]["write"]["lat_ns"]["bins"]
    summary = fio_json.parse({"fio version": "fio-3.33", "jobs": jobs})
    assert summary.write.bins is None and summary.write.percentiles() == {}
    assert summary.write.p99_ns == max(e["write"]["lat_ns"]["percentile"]["99.000000"] for e in jobs)


def test_histograms_of_different_latencies_are_never_added(fixtures):
    lat = jsonplus(fixtures, "client-two-hosts-jsonplus.json")["client_stats"][0]
    clat = jsonplus(fixtures, "client-jsonplus-clat.json")["client_stats"][1]  # cs-seqwrite: clat_ns
    summary = fio_json.parse({"fio version": "fio-3.33", "jobs": [lat, clat]})
    assert summary.write.bins is None
    assert summary.write.p99_ns == max(lat["write"]["lat_ns"]["percentile"]["99.000000"],
                                       clat["write"]["clat_ns"]["percentile"]["99.000000"])


def test_a_group_reported_entry_ran_its_directions_runtime_not_the_sum_of_its_jobs(fixtures):
    # Field note A's active-full (numjobs 4, group_reporting) in the lab: fio's job_runtime
    # summed the 4 jobs (42.1 s) of a 10.6 s phase; bw x runtime then counted 4x the bytes.
    raw = load(fixtures, "seqwrite.json")
    job = raw["jobs"][0]
    job["job_runtime"], job["write"]["runtime"], job["read"]["runtime"] = 42095, 10631, 0
    summary = fio_json.parse(raw)
    assert summary.runtime_ms == 10631
    assert summary.runtime_ms * summary.write.bw_bytes / 1000 == pytest.approx(job["write"]["bw_bytes"] * 10.631)
    # An entry whose directions carry no runtime still has job_runtime.
    job["write"]["runtime"] = 0
    assert fio_json.parse(raw).runtime_ms == 42095


def test_a_value_fio_could_not_compute_is_read_not_refused(fixtures):
    """fio 3.33 writes C's -nan (not JSON) for a steady-state slope over one sample: recorded
    from a real run with a 1 s window, which the options now refuse (test_kb2014)."""
    text = (fixtures / "fio" / "steadystate-nan.json").read_text()
    assert ": -nan," in text
    summary = fio_json.parse_text(text)
    assert summary.write.bw_bytes > 0
    assert summary.steady_state is not None and summary.steady_state.measured == "-nan%"
