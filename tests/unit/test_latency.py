"""Latency pictures (issue 42, item 1): histograms, percentiles and courses over time from
recorded fio json+ output and 1 s logs (tests/fixtures/fio/latency-logs: a local run of two
jobs, and the same job on two fio servers through `fio --client`, fio 3.33, job.fio beside them),
from S3 loader records, and from agents; their document shape and their charts."""

from __future__ import annotations

import gzip
import json
import random
import shutil
from bisect import bisect_left
from pathlib import Path

import pytest

from backupbench.agent.runs import _phase_result
from backupbench.analysis import latency as analysis
from backupbench.engines import fio_bins, fio_json, fio_logs
from backupbench.engines.fio_job import FioJob
from backupbench.engines.s3 import PhaseRun
from backupbench.engines.s3_records import OpRecord, format_records, phase_figures, records_file
from backupbench.results import latency
from backupbench.results.latency_models import PhaseLatency
from backupbench.results.model import COMPLETE, OperationRecord
from backupbench.runner import agents_latency

LOGS = Path(__file__).parents[1] / "fixtures" / "fio" / "latency-logs"


# ---- the histogram ----------------------------------------------------------------------

def test_coarse_keeps_every_count_in_at_most_64_consecutive_buckets():
    rng = random.Random(42)
    values = [int(10 ** rng.uniform(3, 10)) for _ in range(5_000)] + [2 ** 20, 2 ** 20 + 1]
    histogram, steps = latency.coarse((v, 1) for v in values)
    uppers = [upper for upper, _ in histogram]
    assert sum(count for _, count in histogram) == len(values)
    assert len(histogram) <= latency.MAX_BUCKETS and uppers == sorted(set(uppers))
    growth = 2 ** (1 / steps)
    assert all(abs(b / a - growth) < 0.01 * growth for a, b in zip(uppers, uppers[1:]) if a > 100)
    # Each value is counted in the bucket whose bounds hold it: above the one before's upper, at most its own.
    counted = [0] * len(uppers)
    for value in values:
        counted[bisect_left(uppers, value)] += 1
    assert counted == [count for _, count in histogram]
    assert 2 ** 20 in uppers  # a power of two is a bound: the top of its own bucket


def test_coarse_takes_the_finest_step_that_fits():
    assert latency.coarse([(100_000, 1), (800_000, 2)])[1] == 8        # 3 doublings: 8 to each
    assert latency.coarse([(1_000, 1), (10 ** 9, 1)])[1] == 2          # 20 doublings: 2 to each (40 buckets)
    assert latency.coarse([(1, 1), (10 ** 15, 1)])[1] == 1
    assert latency.coarse([]) == ((), 8)
    histogram, _ = latency.coarse([(5_000, 3)])
    assert len(histogram) == 1 and histogram[0][1] == 3 and histogram[0][0] >= 5_000


def test_p99_9_is_the_exact_decimal_share():
    kind = latency.from_latencies("get", [list(range(1, 1001))])
    # 99.9% of 1,000 is the 999th: the double 99.9 is a hair over, and nearest rank would take the 1,000th.
    assert kind.percentiles == {"p50": 500.0, "p90": 900.0, "p99": 990.0, "p99_9": 999.0}
    assert kind.count == 1000


# ---- fio: bins and logs -----------------------------------------------------------------

def _fio_reported(block: dict) -> dict[str, float]:
    said = block["percentile"]
    return {"p50": said["50.000000"], "p90": said["90.000000"], "p99": said["99.000000"], "p99_9": said["99.900000"]}


def test_one_hosts_picture_has_fios_own_percentiles(fixtures):
    text = (fixtures / "fio" / "client-two-hosts-jsonplus.json").read_text()
    data, _ = json.JSONDecoder().raw_decode(text, text.index("{"))
    hosts = [e for e in data["client_stats"] if e["jobname"] != "All clients"]
    assert len(hosts) == 2
    for entry in hosts:
        block = entry["write"]["lat_ns"]
        kind = latency.from_bins("write", [fio_bins.parse(block["bins"])])
        assert kind.percentiles == _fio_reported(block)
        assert kind.count == entry["write"]["total_ios"]


def _phase(name: str, detail: dict) -> OperationRecord:
    return OperationRecord(name=name, pattern="randrw w50% qd2 x2", status=COMPLETE, detail=detail)


def _copy(source: Path, folder: Path) -> Path:
    shutil.copytree(source, folder)
    return folder


def test_two_fio_servers_are_merged_bucket_by_bucket(tmp_path):
    folder = _copy(LOGS / "client", tmp_path / "run")
    found = analysis.phase_latency(folder, _phase("randrw", {"raw": "randrw.json"}))
    assert found.problem == "" and found.latency is not None
    picture = found.latency
    assert (picture.source, picture.hosts, picture.samples) == ("fio", 2, 1)
    assert "2 hosts, added bucket by bucket" in picture.what
    data = json.JSONDecoder().raw_decode((folder / "randrw.json").read_text(),
                                         (folder / "randrw.json").read_text().index("{"))[0]
    hosts = [e for e in data["client_stats"] if e["jobname"] != "All clients"]
    for kind in picture.kinds:
        bins = fio_bins.merge(fio_bins.parse(e[kind.kind]["lat_ns"]["bins"]) for e in hosts)
        # What fio counted in its histograms; its total_ios may differ by a few (here 2 of 32,016).
        assert kind.count == sum(bins.values())
        assert abs(kind.count - sum(e[kind.kind]["total_ios"] for e in hosts)) <= 4
        assert kind.percentiles["p99"] == fio_bins.percentile(bins, 99.0)
        # The figure the table shows (engines/fio_json.py merges the same way) is the picture's.
        summary = fio_json.parse_text((folder / "randrw.json").read_text())
        assert kind.percentiles["p99"] == getattr(summary, kind.kind).p99_ns
        # Both hosts' logs, both jobs each: one course, 3 seconds after the 1 s ramp.
        assert [s.t_s for s in kind.over_time[0].seconds] == [1, 2, 3]


def test_fio_logs_weigh_each_job_by_its_ios():
    lat = [fio_logs.parse_log("1000, 100, 0, 0, 0\n1000, 50, 1, 0, 0\n"),
           fio_logs.parse_log("999, 300, 0, 0, 0\n1000, 70, 1, 0, 0\n")]
    iops = [fio_logs.parse_log("1000, 3, 0, 0, 0\n1000, 1, 1, 0, 0\n"), fio_logs.parse_log("1001, 1, 0, 0, 0\n")]
    merged = fio_logs.merge(lat, iops)
    assert merged["read"] == [fio_logs.SecondMean(1, 150.0, 4)]
    # The second job's log has no write rate for that second: the jobs' plain mean, no count.
    assert merged["write"] == [fio_logs.SecondMean(1, 60.0, None)]


def test_fio_logs_keep_a_jobs_whole_last_window_not_its_sliver():
    # fio 3.33 logs a job's last window, then at the same time what was left when the job ended.
    windows = fio_logs.parse_log((LOGS / "local" / "randrw_lat.1.log").read_text())
    assert windows[("write", 3)] == 289976.0 and windows[("read", 3)] == 262925.0
    with pytest.raises(Exception, match="line 1"):
        fio_logs.parse_log("not, a log\n")


def test_fio_log_files_are_the_jobs_lat_and_iops_logs_only(tmp_path):
    folder = _copy(LOGS / "local", tmp_path / "run")
    for other in ("randrw_clat.1.log", "randrw_slat.1.log", "randrw-2_lat.1.log", "randrw.json"):
        (folder / other).write_text("1000, 1, 0, 0, 0\n")
    files = fio_logs.log_files(folder, "randrw")
    assert sorted(files["lat"]) == sorted(files["iops"]) == [("1", "", ""), ("2", "", "")]
    hosts = fio_logs.log_files(LOGS / "client", "randrw")
    assert sorted(hosts["lat"]) == [("1", "", "127.0.0.1"), ("1", "", "127.0.0.2"), ("2", "", "127.0.0.1"),
                                    ("2", "", "127.0.0.2")]
    # Two servers on one address: runner/hosts.py puts each host's tag in its log name.
    for tag in ("__1-8766", "__1-8767"):
        (folder / f"randrw.{tag}_lat.1.log.::1").write_text("1000, 1, 0, 0, 0\n")
    tagged = fio_logs.log_files(folder, "randrw")["lat"]
    assert ("1", "__1-8766", "::1") in tagged and ("1", "__1-8767", "::1") in tagged


def test_samples_add_up_and_each_keeps_its_course(tmp_path):
    run_folder = tmp_path / "run"
    for sample in (1, 2):
        _copy(LOGS / "local", run_folder / f"sample-{sample}")
    one = analysis.phase_latency(LOGS, _phase("local/randrw", {"raw": "randrw.json"})).latency
    two = analysis.phase_latency(run_folder, _phase("randrw", {"raw": "randrw.json"})).latency
    assert one is not None and two is not None and two.samples == 2
    for single, double in zip(one.kinds, two.kinds):
        assert double.count == 2 * single.count
        assert double.percentiles == single.percentiles    # the same I/O twice: the same shares
        assert [c.sample for c in double.over_time] == [1, 2]


def test_a_run_from_before_json_plus_says_why_it_has_no_picture(tmp_path, fixtures):
    shutil.copy(fixtures / "fio" / "randread.json", tmp_path / "restore-random.json")
    found = analysis.phase_latency(tmp_path, _phase("restore-random", {"raw": "restore-random.json"}))
    assert found.latency is None and "json+" in found.problem
    missing = analysis.phase_latency(tmp_path, _phase("active-full", {"raw": "active-full.json"}))
    assert "not in the run folder" in missing.problem
    assert analysis.phase_latency(tmp_path, _phase("create", {"files": 10})) == analysis.Found()


def test_a_runs_jobs_log_their_latency_an_exported_suite_does_not():
    job = FioJob(name="restore-random", filename=Path("/r/t.dat"), rw="randread", block_size=4096, region_size=8192)
    assert "write_lat_log" not in job.text()
    logged = dict(job.logged().options())
    assert logged["write_lat_log"] == logged["write_iops_log"] == "restore-random"
    assert logged["log_avg_msec"] == "1000"
    assert dict(job.logged("restore-random.__1-8766").options())["write_lat_log"] == "restore-random.__1-8766"


# ---- S3 ---------------------------------------------------------------------------------

def _records(seed: int = 7, count: int = 600) -> list[OpRecord]:
    rng = random.Random(seed)
    records = []
    for key in range(count):
        op = rng.choice(("put", "put", "get", "get", "list", "delete"))
        start = rng.randrange(0, 3_000_000_000)
        took = int(10 ** rng.uniform(5.5, 8))
        error = "SlowDown" if key % 97 == 0 else ""
        records.append(OpRecord(op, key, key % 8, start, start + took // 3, start + took, 4096, 200, error))
    return records


def _stored(folder: Path, op: str, records: list[OpRecord]) -> OperationRecord:
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / records_file(op), "wt") as handle:
        handle.write(format_records(records))
    return _phase(op, {"records": records_file(op)})


def test_s3_picture_per_kind_has_the_phases_own_percentiles(tmp_path):
    records = _records()
    found = analysis.phase_latency(tmp_path, _stored(tmp_path, "mixed", records))
    picture = found.latency
    assert picture is not None and picture.source == "s3"
    assert [k.kind for k in picture.kinds] == ["put", "get", "list", "delete"]   # the mix's order
    for kind in picture.kinds:
        mine = [r for r in records if r.op == kind.kind]
        figures = phase_figures(mine, kind.kind)
        assert kind.count == figures["ops"]
        assert (kind.percentiles["p50"], kind.percentiles["p90"], kind.percentiles["p99"]) == (
            figures["lat_p50_ns"], figures["lat_p90_ns"], figures["lat_p99_ns"])
        seconds = kind.over_time[0].seconds
        assert sum(s.count for s in seconds) == kind.count
        ends = sorted({latency.second_ended(r.end_ns) for r in mine if r.ok})
        assert [s.t_s for s in seconds] == ends
        for second in seconds:
            here = sorted(r.end_ns - r.start_ns for r in mine if r.ok and latency.second_ended(r.end_ns) == second.t_s)
            assert (second.p50_ns, second.p99_ns) == (latency.nearest(here, 50), latency.nearest(here, 99))
            assert second.mean_ns == sum(here) / len(here)


def test_agents_requests_together_are_one_hosts(tmp_path):
    records = _records(count=400)
    one = analysis.phase_latency(tmp_path / "one", _stored(tmp_path / "one", "mixed", records)).latency
    halves = {"a": records[::2], "b": records[1::2]}
    finished = {label: _phase_result("mixed", PhaseRun("mixed", part, {}, {}, started_wall=1000.0), 999.0)
                for label, part in halves.items()}
    folder = tmp_path / "agents"
    folder.mkdir()
    name = agents_latency.write(folder, "mixed", finished)
    merged = analysis.phase_latency(folder, _phase("mixed", {"latencies": name})).latency
    assert one is not None and merged is not None and merged.hosts == 2 and "2 agents" in merged.what
    assert [(k.kind, k.count, k.percentiles, k.histogram) for k in merged.kinds] == \
        [(k.kind, k.count, k.percentiles, k.histogram) for k in one.kinds]
    assert [k.over_time for k in merged.kinds] == [k.over_time for k in one.kinds]


def test_a_later_agents_seconds_are_moved_by_its_start(tmp_path):
    records = [OpRecord("put", i, 0, 0, 0, 400_000_000 + i, 10, 200) for i in range(10)]
    finished = {"a": _phase_result("put", PhaseRun("put", records, {}, {}, started_wall=100.0), 99.0),
                "b": _phase_result("put", PhaseRun("put", records, {}, {}, started_wall=102.2), 99.0)}
    name = agents_latency.write(tmp_path, "put", finished)
    picture = analysis.phase_latency(tmp_path, _phase("put", {"latencies": name})).latency
    assert picture is not None
    assert [(s.t_s, s.count) for s in picture.kinds[0].over_time[0].seconds] == [(1, 10), (3, 10)]


# ---- the document and the charts -------------------------------------------------------

def test_the_document_form_is_its_model(tmp_path):
    folder = _copy(LOGS / "client", tmp_path / "run")
    picture = analysis.phase_latency(folder, _phase("randrw", {"raw": "randrw.json"})).latency
    assert picture is not None
    shown = picture.document()
    PhaseLatency.model_validate(shown)
    kind = shown["kinds"][0]
    assert sum(count for _, count in kind["histogram"]) == kind["count"]
    assert all(len(row) == 5 and row[3] is None for row in kind["over_time"][0]["seconds"])
    assert json.loads(json.dumps(shown)) == shown


def test_a_run_document_with_and_without_latency_validates(tmp_path):
    from backupbench.cli.documents import checked
    from backupbench.results import document
    from backupbench.results.model import RunRecord

    run = RunRecord("20261128T000000-abcdef01", "kb2014", "/srv", {}, status=COMPLETE,
                    finished_at="2026-11-28T00:00:10+00:00")
    run.operations = [_phase("randrw", {"raw": "randrw.json"})]
    run.operations[0].finished_at = "2026-11-28T00:00:10+00:00"
    folder = _copy(LOGS / "client", tmp_path / "run")
    pictures = analysis.document_latency(analysis.run_latency(run, folder))
    with_latency = document.run_document(run, document.Analysis(latency=pictures))
    assert checked(with_latency)["phases"][0]["latency"]["hosts"] == 2
    without = document.run_document(run)
    assert "latency" not in checked(without)["phases"][0]


def test_the_chart_marks_p50_and_p99_and_renders_the_same_bytes(tmp_path):
    pytest.importorskip("matplotlib")
    from backupbench.report import charts, latency_charts, palette

    picture = analysis.phase_latency(LOGS, _phase("local/randrw", {"raw": "randrw.json"})).latency
    assert picture is not None
    svg = charts.inline_svg(latency_charts.phase_figure("randrw", picture), "latency-0", "Latency of randrw")
    assert svg == charts.inline_svg(latency_charts.phase_figure("randrw", picture), "latency-0", "Latency of randrw")
    assert f"fill: {palette.READ.lower()}" in svg and f"fill: {palette.WRITE.lower()}" in svg
    run = RunRecordOf("randrw", {"raw": "randrw.json"})
    html = latency_charts.latency_html(run, LOGS / "local")
    assert html.count('aria-label="Latency of randrw"') == 1
    read = picture.kinds[0]
    assert f"read p50 {latency_charts.ms_text(read.percentiles['p50'])}, p99 " in html
    assert latency_charts.ms_text(412_345) == "0.412 ms" and latency_charts.ms_text(8_976_000) == "8.98 ms"
    assert latency_charts.ms_text(1_204_000_000) == "1,204 ms"


def test_a_phase_without_a_picture_says_why_in_the_report(tmp_path, fixtures):
    pytest.importorskip("matplotlib")
    from backupbench.report import latency_charts

    shutil.copy(fixtures / "fio" / "randread.json", tmp_path / "restore-random.json")
    html = latency_charts.latency_html(RunRecordOf("restore-random", {"raw": "restore-random.json"}), tmp_path)
    assert '<p class="no-latency">restore-random: fio' in html and "<svg" not in html


def RunRecordOf(name: str, detail: dict):
    from backupbench.results.model import RunRecord

    run = RunRecord("20261128T000000-abcdef01", "kb2014", "/srv", {}, status=COMPLETE)
    run.operations = [_phase(name, detail)]
    return run
