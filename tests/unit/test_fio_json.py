import json

import pytest

from backupbench.engines import fio_json
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


def test_several_jobs_add_up_and_keep_worst_p99(fixtures):
    raw = load(fixtures, "randread.json")
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
