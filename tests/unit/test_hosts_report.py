"""Reports of multi-host runs (issue 15): per-host figures against the hosts' median, slow and
lost hosts, in the terminal and the HTML page. Runs are made here, shaped as runner/hosts.py
stores them (figures = the hosts' total, the HostAccount each host's figures)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from backupbench.analysis.hosts import host_breakdown, lost_hosts, slow_hosts
from backupbench.report.hosts import caption, hosts_renderables, judgement_notes, slow_notes
from backupbench.report.terminal import run_report
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
from backupbench.results.phase import HostAccount

MiB = 2**20
P99_NOTE = "p99 latency of the total is the worst host's: fio's client mode gives no histograms to merge"


def fio_host(effective_mib: float, p99_ms: float, way: str = "write") -> dict[str, float]:
    """A host's figures as runner/hosts.py scores them; the other direction's p99 is half."""
    other = "read" if way == "write" else "write"
    return {f"{way}_bw": effective_mib * MiB, "effective_bw": effective_mib * MiB, f"{way}_iops": effective_mib * 2,
            f"{way}_p99_lat": p99_ms * 1e6, f"{other}_p99_lat": p99_ms * 0.5e6}


def host_op(name: str, hosts: dict[str, dict[str, float]], lost: dict[str, str] | None = None,
            pattern: str = "write qd1") -> OperationRecord:
    """An operation as runner/hosts.py records it: total = sum, p99 = worst host's."""
    total = {name: sum(f.get(name, 0) for f in hosts.values()) for name in ("effective_bw", "read_bw", "write_bw",
                                                                 "read_iops", "write_iops")}
    total.update({name: max((f.get(name, 0) for f in hosts.values()), default=0)
                  for name in ("read_p99_lat", "write_p99_lat")})
    total["hosts_reporting"] = float(len(hosts))
    return OperationRecord(name=name, pattern=pattern, status=COMPLETE, figures=total,
                           hosts=HostAccount([hosts], lost or {}), detail={"p99_total": P99_NOTE})


def multi_host_run() -> RunRecord:
    """Three hosts; 10.0.0.6 is 22% under the median in active-full; 10.0.0.7 is lost during
    restore-random and absent from sequential-read."""
    ops = [
        host_op("active-full", {"10.0.0.5": fio_host(500, 4.0), "10.0.0.6": fio_host(390, 9.5),
                                "10.0.0.7": fio_host(510, 3.8)}),
        host_op("restore-random", {"10.0.0.5": fio_host(200, 2.0, "read"), "10.0.0.6": fio_host(180, 2.5, "read")},
                lost={"10.0.0.7": "connection refused"}, pattern="randread qd4"),
        host_op("sequential-read", {"10.0.0.5": fio_host(800, 1.0, "read"), "10.0.0.6": fio_host(600, 1.2, "read")},
                pattern="read qd1"),
    ]
    return RunRecord(run_id="20261124T000000-abcd0123", kind="kb2014", target="10.0.0.5,10.0.0.6,10.0.0.7:/backup",
                     settings={"hosts": ["10.0.0.5", "10.0.0.6", "10.0.0.7"]}, status=COMPLETE, operations=ops,
                     notes=["host 10.0.0.7 lost during restore-random: connection refused; the run went on without it"])


def rendered(renderable, width: int = 160) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------
# analysis/hosts.py


def test_breakdown_sets_each_host_against_the_median_of_those_that_reported():
    active, restore, sequential = host_breakdown(multi_host_run())
    assert [r.host for r in active.hosts] == ["10.0.0.5", "10.0.0.6", "10.0.0.7"]
    assert active.median == 500 * MiB
    assert active.total == 1400 * MiB
    assert active.total_p99_ns == 9.5e6
    slow = active.slow
    assert [r.host for r in slow] == ["10.0.0.6"] and slow[0].under_median == pytest.approx(0.22)
    # p99 per host: the worse of read and write
    assert {r.host: r.p99_ns for r in active.hosts}["10.0.0.6"] == 9.5e6
    # The lost host is not in the median: 200 and 180 -> 190, and 180 is only 5% under it.
    assert restore.median == 190 * MiB and restore.slow == []
    assert restore.lost == {"10.0.0.7": "connection refused"} and restore.absent == []
    # 600 against a median of 700 is 14% under: not slow. The host lost before is absent, not lost again.
    assert sequential.slow == [] and sequential.lost == {} and sequential.absent == ["10.0.0.7"]


def test_two_hosts_cannot_name_an_outlier_and_say_so():
    # With two hosts the median is their mean: either host was "slow" against it (-66% / +66%).
    # Each host is judged against the others (noise.judge_hosts): with one other, neither is named.
    run = RunRecord("r", "kb2014", "t", {}, operations=[
        host_op("active-full", {"a": fio_host(100, 1), "b": fio_host(70, 1)})])
    (op,) = host_breakdown(run)
    assert op.median == 85 * MiB and op.slow == []
    assert op.note.startswith("active-full: two hosts cannot name an outlier (b against a: 1.43x slower on one "
                              "sample (each side)")
    assert judgement_notes([op]) == [op.note] and slow_notes([op]) == []


@pytest.mark.parametrize("value, slow", [(85.0, False), (84.9, True), (120.0, False)])
def test_slow_means_more_than_15_percent_under_the_median(value, slow):
    run = RunRecord("r", "kb2014", "t", {}, operations=[
        host_op("active-full", {"a": fio_host(100, 1), "b": fio_host(100, 1), "c": fio_host(value, 1)})])
    (op,) = host_breakdown(run)
    assert op.median == 100 * MiB
    assert [r.host for r in op.slow] == (["c"] if slow else [])


def test_s3_agents_shape_is_read_the_same_way():
    # The distributed S3 run: agents by label, effective_bw, objects_per_s and lat_p99_ns.
    agents = {f"agent-{i}": {"effective_bw": bw * MiB, "objects_per_s": bw / 4, "lat_p99_ns": p99 * 1e6}
              for i, (bw, p99) in enumerate([(300, 20), (310, 22), (200, 80)], 1)}
    op = OperationRecord("put", "PUT 4MiB", COMPLETE,
                         figures={"effective_bw": 810 * MiB, "objects_per_s": 202.5, "lat_p99_ns": 70e6},
                         hosts=HostAccount([agents]))
    (found,) = host_breakdown(RunRecord("r", "s3", "bucket", {}, operations=[op]))
    assert found.figure == "effective_bw" and found.median == 300 * MiB
    assert [(r.host, r.p99_ns) for r in found.slow] == [("agent-3", 80e6)]
    assert found.total_p99_ns == 70e6


def test_phase_without_bytes_is_judged_by_its_request_rate():
    agents = {"a": {"objects_per_s": 1000.0}, "b": {"objects_per_s": 500.0}, "c": {"objects_per_s": 990.0}}
    op = OperationRecord("delete", "DELETE", COMPLETE, figures={"objects_per_s": 2490.0}, hosts=HostAccount([agents]))
    (found,) = host_breakdown(RunRecord("r", "s3", "bucket", {}, operations=[op]))
    assert found.figure == "objects_per_s" and [r.host for r in found.slow] == ["b"]


def test_a_real_delete_from_two_agents_is_judged_by_its_request_rate_not_its_zero_bytes():
    # As agents store a DELETE: effective_bw 0.0 on every host (it moves no bytes), not absent.
    agents = {"a": {"effective_bw": 0.0, "objects_per_s": 800.0}, "b": {"effective_bw": 0.0, "objects_per_s": 400.0}}
    op = OperationRecord("delete", "DELETE", COMPLETE, figures={"effective_bw": 0.0, "objects_per_s": 1200.0},
                         hosts=HostAccount([agents]))
    (found,) = host_breakdown(RunRecord("r", "s3", "bucket", {}, operations=[op]))
    assert found.figure == "objects_per_s" and found.median == 600.0
    assert found.note.startswith("delete: two hosts cannot name an outlier (b against a")


def test_single_host_runs_have_no_breakdown():
    op = OperationRecord("active-full", "write qd1", COMPLETE, figures={"effective_bw": 100.0},
                         detail={"job_file": "x"})
    run = RunRecord("r", "kb2014", "/repo", {}, operations=[op])
    assert host_breakdown(run) == [] and hosts_renderables(run) == []
    assert "Hosts" not in rendered(run_report(run))


def test_slow_and_lost_hosts_by_host():
    breakdown = host_breakdown(multi_host_run())
    assert list(slow_hosts(breakdown)) == ["10.0.0.6"]
    assert lost_hosts(breakdown) == {"10.0.0.7": ("restore-random", "connection refused")}


def test_host_lost_in_every_operation_gives_no_median():
    op = host_op("active-full", {}, lost={"a": "timeout", "b": "timeout"})
    op.figures = {"hosts_reporting": 0.0}
    (found,) = host_breakdown(RunRecord("r", "kb2014", "t", {}, operations=[op]))
    assert found.hosts == [] and found.median is None and found.total is None and found.slow == []


# ---------------------------------------------------------------------------------------------
# Terminal


def test_note_line_per_slow_host_names_how_much_and_where():
    run = multi_host_run()
    run.operations[2].hosts.samples[0]["10.0.0.6"] = fio_host(500, 1.2, "read")   # 23% under 650 as well
    breakdown = host_breakdown(run)
    # sequential-read's 23% is not called slow: 10.0.0.7 was lost, and two hosts cannot name an
    # outlier (either may be the odd one); a note says so for each such operation, apart from the slow hosts.
    assert slow_notes(breakdown) == ["host 10.0.0.6 is 22% under the median in active-full"]
    others = judgement_notes(breakdown)
    assert [note.split(":")[0] for note in others] == ["restore-random", "sequential-read"]
    assert all("two hosts cannot name an outlier" in note for note in others)


def test_run_report_prints_the_hosts_table_under_the_operations_table():
    text = rendered(run_report(multi_host_run()))
    assert text.index("Run 20261124T000000-abcd0123") < text.index("Hosts of run") < text.index("note: host 10.0.0.6")
    assert "note: host 10.0.0.6 is 22% under the median in active-full" in text
    assert text.count("note: host 10.0.0.6 is") == 1
    lines = text.splitlines()
    slow_row = next(line for line in lines if "10.0.0.6" in line and "390.0" in line)
    assert "9.50 ms" in slow_row and "-22% SLOW" in slow_row
    assert any("median of 3 hosts" in line and "500.0" in line for line in lines)
    assert any("total" in line and "1,400.0" in line for line in lines)
    lost_row = next(line for line in lines if "10.0.0.7" in line and "connection refused" in line)
    assert "lost" in lost_row
    assert any("10.0.0.5" in line and "500.0" in line and " 0%" in line for line in lines)
    assert any("10.0.0.7" in line and "not in this operation" in line for line in lines)
    assert "lost: 10.0.0.7 during restore-random (connection refused)" in " ".join(text.split())


# ---------------------------------------------------------------------------------------------
# HTML


def test_html_report_has_the_hosts_table_slow_callout_and_chart(tmp_path):
    pytest.importorskip("matplotlib")
    from backupbench.report import html

    run = multi_host_run()
    run.operations[0].hosts.samples[0]['<b onmouseover="x">'] = fio_host(505, 4.0)
    page = html.render(run, results_dir=tmp_path)
    assert "Hosts of run 20261124T000000-abcd0123" in page
    assert "host 10.0.0.6 is 22% under the median in active-full" in page
    assert 'aria-label="Each operation per host against the median"' in page
    assert "&lt;b onmouseover=&quot;x&quot;&gt;" in page and '<b onmouseover="x">' not in page
    assert page.count("<svg ") == 3   # speed, latency, hosts


def two_host_run() -> RunRecord:
    """Two hosts, 30% apart in each operation: neither can be called slow (noise.judge_hosts)."""
    return RunRecord("20261124T000000-two2", "kb2014", "10.0.0.5,10.0.0.6:/backup", {}, status=COMPLETE,
                     operations=[host_op(name, {"10.0.0.5": fio_host(100, 1), "10.0.0.6": fio_host(70, 1)})
                                 for name in ("active-full", "restore-random")])


def test_two_hosts_raise_no_slow_host_alarm_in_the_html_report(tmp_path):
    # Issue 37: a red "Slow hosts" box whose every line said no host could be named.
    pytest.importorskip("matplotlib")
    from backupbench.report import html

    page = html.render(two_host_run(), results_dir=tmp_path)
    assert "Slow hosts" not in page and 'class="callout bad"' not in page
    assert ('<p class="table-note">note: active-full: two hosts cannot name an outlier (10.0.0.6 against 10.0.0.5: '
            "1.43x slower on one sample (each side)") in page
    assert "no host is called slow" in page and "hatched red-edged" not in page
    # A host called slow still gets the red box, with only the slow hosts in it.
    slow = html.render(multi_host_run(), results_dir=tmp_path)
    box = slow[slow.index('<div class="callout bad">'):]
    box = box[:box.index("</div>")]
    assert "Slow hosts" in box and "host 10.0.0.6 is 22% under the median in active-full" in box
    assert "two hosts cannot name an outlier" not in box


def test_two_hosts_raise_no_slow_host_alarm_in_the_terminal():
    shown = hosts_renderables(two_host_run())
    notes = shown[1:]
    assert [str(n).split(":")[1].strip() for n in notes] == ["active-full", "restore-random"]
    # Plain, not the yellow of a warning: nothing is wrong with either host.
    assert all(n.style == "" for n in notes)
    text = rendered(run_report(two_host_run()))
    assert "SLOW" not in text and "note: active-full: two hosts cannot name an outlier" in text
    yellow = [part for part in hosts_renderables(multi_host_run())[1:] if part.style == "yellow"]
    assert [str(part) for part in yellow] == ["note: host 10.0.0.6 is 22% under the median in active-full"]


def test_hosts_chart_is_left_out_when_no_host_reported():
    pytest.importorskip("matplotlib")
    from backupbench.report.hosts import hosts_chart_html, hosts_figure

    op = host_op("active-full", {}, lost={"a": "timeout"})
    op.figures = {}
    run = RunRecord("r", "kb2014", "t", {}, operations=[op])
    assert hosts_figure(host_breakdown(run)) is None and hosts_chart_html(run) == ""


def test_operations_judged_by_different_figures_name_their_unit():
    put = OperationRecord("put", "PUT", COMPLETE, figures={"effective_bw": 300 * MiB},
                          hosts=HostAccount([{"a": {"effective_bw": 100 * MiB}, "b": {"effective_bw": 200 * MiB}}]))
    delete = OperationRecord("delete", "DELETE", COMPLETE, figures={"objects_per_s": 300.0},
                             hosts=HostAccount([{"a": {"objects_per_s": 100.0}, "b": {"objects_per_s": 200.0}}]))
    text = rendered(hosts_renderables(RunRecord("r", "s3", "bucket", {}, operations=[put, delete]))[0])
    lines = text.splitlines()
    assert "effective MiB/s" in text
    assert any(line.startswith("│ put") and "100.0 " in line and "objects/s" not in line for line in lines)
    assert any("delete" in line and "100.0 objects/s" in line for line in lines)


# ---------------------------------------------------------------------------------------------
# Per-host timelines: each host's monitor CSV (as runner/host_monitor.py writes it from its
# agent's samples) and the phase's span in its HostAccount.timeline.

T0 = 1_800_000_000.0   # the phase's start by the controller's clock


def _host_csv(path, rates: dict[float, float], devices=("sda", "dm-0")) -> None:
    """Samples ending at T0 + each offset; sda writes `MiB/s`, dm-0 (stacked on it) the same."""
    from dataclasses import fields

    from backupbench.monitor.csvlog import CsvLog
    from backupbench.monitor.rates import DiskRates, Sample

    log = CsvLog(path, list(devices))
    for index, (offset, mib) in enumerate(sorted(rates.items())):
        disk = DiskRates(**{**{f.name: 0.0 for f in fields(DiskRates)}, "w_s": mib * 4, "wMB_s": mib, "util": 50.0})
        log.write(Sample(T0 + offset, 100.0 + index, 1.0, None, None, None, {d: disk for d in devices}))
    log.close()


def _timeline_run(folder, lost: dict[str, str] | None = None) -> RunRecord:
    folder.mkdir(parents=True, exist_ok=True)
    # Before the phase, in it (midpoints 0.5 .. 9.5 s), and after it.
    _host_csv(folder / "monitor.10.0.0.5.csv", {-3.0: 999.0, **{float(s): 100.0 + s for s in range(1, 11)}, 14.0: 999.0})
    _host_csv(folder / "monitor.10.0.0.6.csv", {float(s): 50.0 for s in range(1, 11)})
    run = multi_host_run()
    run.run_id = folder.name
    run.operations[0].hosts.timeline = {
        "from_wall": T0, "to_wall": T0 + 10.0, "interval_s": 1.0, "lost": lost or {},
        "hosts": {"10.0.0.5": {"csv": "monitor.10.0.0.5.csv", "disks": ["sda"]},
                  "10.0.0.6": {"csv": "monitor.10.0.0.6.csv", "disks": ["sda"]},
                  "10.0.0.7": {"csv": "../../outside.csv", "disks": ["sda"]}}}
    return run


def test_each_host_gets_a_line_of_its_whole_disks_over_the_phase_only(tmp_path):
    from backupbench.report.hosts import host_timelines

    run = _timeline_run(tmp_path / "runs" / "r1")
    (tmp_path / "outside.csv").write_text("timestamp,elapsed_s\n")
    (timeline,) = host_timelines(run, tmp_path / "runs" / "r1")
    assert timeline.operation == "active-full" and timeline.duration_s == 10.0
    lines = {line.host: line for line in timeline.lines}
    assert set(lines) == {"10.0.0.5", "10.0.0.6"}
    # dm-0 sits on sda: counting it would double every figure; the samples outside the span are left out.
    assert lines["10.0.0.5"].disks == ("sda",)
    assert lines["10.0.0.5"].mib_s == tuple(100.0 + s for s in range(1, 11))
    assert lines["10.0.0.5"].ends == tuple(float(s) for s in range(1, 11))
    assert (lines["10.0.0.5"].mean, lines["10.0.0.5"].peak) == (105.5, 110.0)
    assert lines["10.0.0.6"].mean == 50.0
    # A name leading out of the run folder is not read.
    assert timeline.missing == {"10.0.0.7": "../../outside.csv not readable"}


def test_html_report_draws_one_line_per_host_in_its_colour(tmp_path):
    pytest.importorskip("matplotlib")
    from backupbench.report import html, palette

    run = _timeline_run(tmp_path / "runs" / "r2", lost={"10.0.0.8": "connection refused (3 calls in a row)",
                                                        "10.0.0.6": "no answer in time"})
    page = html.render(run, results_dir=tmp_path)
    section = page[page.index("Per-host timelines (1 s samples from each host"):]
    assert 'aria-label="Per-host timeline of active-full: 10.0.0.5, 10.0.0.6"' in section
    svg = section[section.index("<svg "):section.index("</svg>")]
    # One line per host, in the colour the page gives it (report/palette.py: hosts first).
    for colour in palette.THINGS[:2]:
        assert f"stroke: {colour.lower()}" in svg
    assert f"stroke: {palette.THINGS[2].lower()}" not in svg
    caption = section[section.index("<figcaption>"):section.index("</figcaption>")]
    assert ("10.0.0.5: mean 105.5, peak 110.0 MiB/s over its whole disks: sda (10 samples; raw: monitor.10.0.0.5.csv)"
            in caption)
    assert "no line for 10.0.0.8: its agent stopped answering: connection refused" in caption
    assert "10.0.0.6&#x27;s agent stopped answering (no answer in time): its line ends there" in caption
    assert page.count("<svg ") == 4   # speed, latency, hosts and the one phase with samples


def test_without_agents_no_per_host_timeline_section(tmp_path):
    pytest.importorskip("matplotlib")
    from backupbench.report import html

    (tmp_path / "runs" / "r3").mkdir(parents=True)
    run = multi_host_run()
    run.run_id = "r3"
    page = html.render(run, results_dir=tmp_path)
    assert 'id="host-timelines"' not in page and "Per-host timeline of" not in page
    assert "no per-host samples were fetched" in page


def test_a_per_host_line_sums_the_agent_roots_disks_and_a_short_one_is_not_drawn(tmp_path):
    pytest.importorskip("matplotlib")
    from backupbench.report import html

    folder = tmp_path / "runs" / "r4"
    run = _timeline_run(folder)
    # 10.0.0.6 has only three samples in the phase: no shape over time to draw.
    _host_csv(folder / "monitor.10.0.0.6.csv", {1.0: 50.0, 2.0: 50.0, 3.0: 50.0})
    hosts = run.operations[0].hosts.timeline["hosts"]
    for host in ("10.0.0.5", "10.0.0.6"):
        hosts[host].update(disks=["sda"], of_target=True, stack="/srv/agent: xfs on dm-0; members sda")
    page = html.render(run, results_dir=tmp_path)
    section = page[page.index("Per-host timelines (1 s samples from each host"):]
    assert 'aria-label="Per-host timeline of active-full: 10.0.0.5"' in section
    caption = section[section.index("<figcaption>"):section.index("</figcaption>")]
    assert ("10.0.0.5: mean 105.5, peak 110.0 MiB/s over the disks under its agent&#x27;s root "
            "(/srv/agent: xfs on dm-0; members sda): sda (10 samples" in caption)
    assert "10.0.0.6: mean 50.0" in caption and "(3 samples; raw: monitor.10.0.0.6.csv), not drawn: fewer than 5" in caption


def repeated_host_op(name: str, samples: list[dict[str, float]]) -> OperationRecord:
    """An operation measured len(samples) times as runner/phases.py stores it: each sample's
    hosts in its HostAccount, whose per-host medians the report reads."""
    each = [{host: fio_host(mib, 1.0) for host, mib in sample.items()} for sample in samples]
    median = {host: fio_host(sorted(s[host] for s in samples)[len(samples) // 2] if len(samples) % 2 else
                             sum(s[host] for s in samples) / len(samples), 1.0) for host in samples[0]}
    op = host_op(name, median)
    op.hosts = HostAccount(each)
    return op


def test_with_repeats_a_noisy_host_is_judged_over_its_samples_not_one_value():
    # c's median (80) is 20% under the others': slow on one value; its samples (60, 100) reach
    # the others, so over its samples it is not named slow.
    run = RunRecord("r", "kb2014", "t", {}, operations=[
        repeated_host_op("active-full", [{"a": 100, "b": 100, "c": 60}, {"a": 100, "b": 100, "c": 100}])])
    (op,) = host_breakdown(run)
    assert op.samples == 2 and {r.host: r.value for r in op.hosts}["c"] == 80 * MiB and op.slow == []
    single = RunRecord("r", "kb2014", "t", {}, operations=[
        host_op("active-full", {"a": fio_host(100, 1), "b": fio_host(100, 1), "c": fio_host(80, 1)})])
    assert [r.host for r in host_breakdown(single)[0].slow] == ["c"]
    # A steadily slow host stays slow with samples.
    steady = RunRecord("r", "kb2014", "t", {}, operations=[
        repeated_host_op("active-full", [{"a": 100, "b": 101, "c": 70}, {"a": 99, "b": 100, "c": 71}])])
    assert [r.host for r in host_breakdown(steady)[0].slow] == ["c"]


def test_with_repeats_two_hosts_are_compared_beyond_noise_and_the_caption_says_medians():
    run = RunRecord("r", "kb2014", "t", {}, status=COMPLETE, operations=[
        repeated_host_op("active-full", [{"a": 100, "b": 50}, {"a": 102, "b": 51}, {"a": 101, "b": 49}])])
    (op,) = host_breakdown(run)
    assert op.note == ("active-full: two hosts cannot name an outlier (b against a: 2.02x slower); "
                       "either may be the odd one: a third host would tell")
    assert "each host: the median of its 3 samples, judged over all of them" in caption(run, [op])
