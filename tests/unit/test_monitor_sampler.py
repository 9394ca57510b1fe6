"""The Sampler over a fake /proc in tmp_path and a fake clock: CSV, summary, warnings,
hot-plug and failures. No real time is measured; the threaded tests only check that the
thread starts, samples and stops."""

from __future__ import annotations

import csv
import threading

import pytest

from backupbench.errors import InputError
from backupbench.monitor import Sampler, Thresholds
from backupbench.monitor.csvlog import header

from monitor_support import LAB, FakeProc, disk_line


def test_fixture_interval_through_the_sampler_gives_iostat_figures_and_a_csv_row(tmp_path):
    fake = FakeProc(tmp_path / "host")
    csv_path = tmp_path / "run" / "monitor.csv"
    sampler = Sampler(1.0, ["dm-0", "vda"], csv_path, host=fake.host, clock=fake.clock)
    sampler.start(background=False)
    fake.advance(4.0, diskstats=(LAB / "diskstats-2.txt").read_text())
    sample = sampler.sample_once()
    summary = sampler.stop()

    assert sample.disks["dm-0"].wMB_s == pytest.approx(50 / 4.0)
    assert sample.cpu.user == pytest.approx(25.0) and sample.cpu.idle == pytest.approx(75.0)
    rows = list(csv.reader(csv_path.open()))
    assert rows[0] == header(["dm-0", "vda"])
    assert rows[0][:13] == ["timestamp", "elapsed_s", "%user", "%system", "%iowait", "%steal", "%idle",
                            "mem_used_MiB", "%memused", "swap_used_MiB", "ldavg-1", "ldavg-5", "ldavg-15"]
    assert rows[0][13:25] == ["dm-0:r/s", "dm-0:w/s", "dm-0:rMB/s", "dm-0:wMB/s", "dm-0:rrqm/s", "dm-0:wrqm/s",
                              "dm-0:r_await", "dm-0:w_await", "dm-0:aqu-sz", "dm-0:rareq-sz", "dm-0:wareq-sz",
                              "dm-0:%util"]
    row = dict(zip(rows[0], rows[1]))
    assert len(rows) == 2
    assert row["elapsed_s"] == "4.000" and row["dm-0:wMB/s"] == "12.50" and row["dm-0:w/s"] == "3200.00"
    assert row["dm-0:w_await"] == f"{568704 / 12800:.2f}" and row["dm-0:%util"] == "69.20"
    # 102400 sectors in 12800 writes: 4 KiB each; dm-0 merges nothing; vda merged 25331 writes in 4 s
    assert row["dm-0:wareq-sz"] == "4.00" and row["dm-0:rareq-sz"] == "0.00" and row["dm-0:wrqm/s"] == "0.00"
    assert row["vda:wrqm/s"] == f"{(35478 - 10147) / 4:.2f}" and row["vda:rrqm/s"] == f"{(17312 - 4790) / 4:.2f}"
    assert row["mem_used_MiB"] == "1000.00" and row["%memused"] == "50.00" and row["ldavg-1"] == "0.50"
    assert summary.samples == 1 and summary.csv_path == csv_path
    assert summary["dm-0.wMB_s"].avg == pytest.approx(12.5) and summary["dm-0.wMB_s"].unit == "MiB/s"
    assert summary["mem_used_pct"].max == pytest.approx(50.0)


def test_averages_are_per_second_and_await_per_io(tmp_path):
    fake = FakeProc(tmp_path)
    fake.write(diskstats=disk_line("vda", 0, 0, 0, 0, 0))
    sampler = Sampler(1.0, ["vda"], host=fake.host, clock=fake.clock).start(background=False)
    # 1 s with 100 writes of 2048 sectors taking 50 ms each, then 3 idle seconds
    fake.advance(1.0, diskstats=disk_line("vda", 100, 204800, 5000, 1000, 5000))
    sampler.sample_once()
    fake.advance(3.0)
    sampler.sample_once()
    s = sampler.stop()
    assert s.duration_s == pytest.approx(4.0)
    assert s["vda.w_s"].avg == pytest.approx(100 / 4.0)        # total / total time
    assert s["vda.w_s"].max == pytest.approx(100.0)
    assert s["vda.wMB_s"].avg == pytest.approx(100.0 / 4.0)    # 100 MiB over 4 s
    assert s["vda.util"].avg == pytest.approx(25.0)
    assert s["vda.w_await"].avg == pytest.approx(50.0)         # idle seconds do not dilute latency
    assert s["vda.w_await"].count == 1
    assert s["vda.r_await"].avg == 0 and s["vda.r_await"].count == 0


def test_request_size_is_averaged_per_request_and_never_taken_for_a_latency(tmp_path):
    fake = FakeProc(tmp_path)
    fake.write(diskstats=disk_line("vda", 0, 0, 0, 0, 0))
    sampler = Sampler(1.0, ["vda"], host=fake.host, clock=fake.clock,
                      thresholds=Thresholds(io_await_ms=100)).start(background=False)
    # 100 writes of 1 MiB (2048 sectors) at 1 ms, then 300 writes of 4 KiB (8 sectors) at 1 ms
    fake.advance(1.0, diskstats=disk_line("vda", 100, 204800, 100, 500, 100))
    sampler.sample_once()
    fake.advance(1.0, diskstats=disk_line("vda", 400, 204800 + 2400, 400, 900, 400))
    sampler.sample_once()
    s = sampler.stop()
    # KiB written / writes, as iostat's wareq-sz over the whole period: (102400 + 1200) / 400
    assert s["vda.wareq_sz"].avg == pytest.approx((100 * 1024 + 300 * 4) / 400) == pytest.approx(259.0)
    assert s["vda.wareq_sz"].max == pytest.approx(1024.0) and s["vda.wareq_sz"].unit == "KiB"
    assert s["vda.rareq_sz"].count == 0 and s["vda.wrqm_s"].unit == "merges/s"
    assert s.warnings == []     # 1024 KiB requests are not 1024 ms of latency


def test_threshold_crossings_become_warnings(tmp_path):
    fake = FakeProc(tmp_path)
    fake.write(diskstats=disk_line("vda", 0, 0, 0, 0, 0), load="3.00 1.0 1.0 1/1 1")
    sampler = Sampler(1.0, ["vda"], host=fake.host, clock=fake.clock,
                      thresholds=Thresholds(io_await_ms=100, load1=2)).start(background=False)
    ios = ticks = 0
    for await_ms, load in ((152, "3.00"), (120, "1.50"), (80, "2.50"), (101, "1.00")):
        ios, ticks = ios + 10, ticks + 10 * await_ms
        fake.advance(1.0, diskstats=disk_line("vda", ios, ios * 8, ticks, 900, ticks), load=f"{load} 1 1 1/1 1")
        sampler.sample_once()
    s = sampler.stop()
    assert s.warnings == ["vda w_await 152 ms above 100 ms (3 samples)", "load1 3.00 above 2 (2 samples)"]
    assert s["vda.w_await"].max == pytest.approx(152)


def test_default_load_threshold_is_the_core_count(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 6)
    assert Thresholds().load1_limit() == 6.0
    assert "core count" in Thresholds().describe_load1()
    with pytest.raises(InputError):
        Thresholds(io_await_ms=0)


def test_device_vanishing_and_coming_back_reset_is_noted_not_raised(tmp_path):
    fake = FakeProc(tmp_path)
    both = disk_line("vda", 10, 80, 10, 10, 10) + disk_line("loop5", 500, 4000, 50, 50, 50, 7, 5)
    fake.write(diskstats=both)
    csv_path = tmp_path / "m.csv"
    sampler = Sampler(1.0, ["vda", "loop5", "sdq"], csv_path, host=fake.host, clock=fake.clock).start(background=False)
    fake.advance(1.0, diskstats=disk_line("vda", 20, 160, 20, 20, 20))                      # loop5 detached
    first = sampler.sample_once()
    fake.advance(1.0, diskstats=disk_line("vda", 30, 240, 30, 30, 30) + disk_line("loop5", 0, 0, 0, 0, 0, 7, 5))
    sampler.sample_once()
    fake.advance(1.0, diskstats=disk_line("vda", 40, 320, 40, 40, 40) + disk_line("loop5", 8, 64, 8, 8, 8, 7, 5))
    last = sampler.sample_once()
    s = sampler.stop()
    assert set(first.disks) == {"vda"} and last.disks["loop5"].w_s == pytest.approx(8.0)
    assert s.notes == ["sdq is not present (no such device in /proc/diskstats)",
                       "loop5 vanished at 1.0 s", "loop5 appeared at 2.0 s"]
    assert s.samples == 3 and s["loop5.w_s"].count == 1 and s.errors == []
    rows = list(csv.DictReader(csv_path.open()))
    assert [r["loop5:w/s"] for r in rows] == ["", "", "8.00"]
    assert [r["sdq:w/s"] for r in rows] == ["", "", ""]


def test_counters_going_down_mid_run_drop_that_interval(tmp_path):
    fake = FakeProc(tmp_path)
    fake.write(diskstats=disk_line("vda", 5000, 40000, 500, 500, 500))
    sampler = Sampler(1.0, ["vda"], host=fake.host, clock=fake.clock).start(background=False)
    fake.advance(1.0, diskstats=disk_line("vda", 4, 32, 1, 1, 1))
    assert sampler.sample_once().disks == {}
    fake.advance(1.0, diskstats=disk_line("vda", 14, 112, 11, 11, 11))
    assert sampler.sample_once().disks["vda"].w_s == pytest.approx(10.0)
    assert sampler.stop().notes == ["vda counters were reset at 1.0 s (interval dropped)"]


def test_unreadable_files_are_recorded_as_errors_and_sampling_goes_on(tmp_path):
    fake = FakeProc(tmp_path)
    (tmp_path / "proc" / "loadavg").unlink()
    sampler = Sampler(1.0, ["vda"], host=fake.host, clock=fake.clock).start(background=False)
    fake.advance(1.0, diskstats=(LAB / "diskstats-2.txt").read_text())
    sampler.sample_once()
    fake.advance(1.0)
    sampler.sample_once()
    s = sampler.stop()
    assert s.samples == 2 and "load1" not in s and "vda.util" in s
    assert len(s.errors) == 1 and "/proc/loadavg" in s.errors[0] and "(3 times)" in s.errors[0]


def test_devices_none_means_all_block_devices_present_at_start(tmp_path):
    fake = FakeProc(tmp_path)
    sampler = Sampler(1.0, None, host=fake.host, clock=fake.clock).start(background=False)
    assert sampler.devices == list((LAB / "diskstats-1.txt").read_text().split()[2::20])   # the name of each 20-field line
    sampler.stop()


@pytest.mark.parametrize("interval", [0.1, 0.0, 10.5, -1, "fast"])
def test_interval_outside_0_2_to_10_s_is_an_input_error(interval):
    with pytest.raises(InputError) as err:
        Sampler(interval)
    assert err.value.fix


def test_stop_without_start_and_twice_is_harmless():
    sampler = Sampler(0.5)
    s = sampler.stop()
    assert s.samples == 0 and s.errors == ["the sampler was never started"]
    assert sampler.stop() is s


def test_thread_samples_and_stops_even_when_the_workload_raises(tmp_path):
    got_two = threading.Event()
    seen = []

    def on_sample(sample):
        seen.append(sample)
        if len(seen) >= 2:
            got_two.set()

    fake = FakeProc(tmp_path)   # real clock here: files stay the same, rates are 0
    with pytest.raises(RuntimeError, match="workload failed"):
        with Sampler(0.2, ["vda"], tmp_path / "m.csv", host=fake.host, on_sample=on_sample) as sampler:
            assert sampler.running
            assert got_two.wait(timeout=30), "the sampling thread produced no samples"
            raise RuntimeError("workload failed")
    assert not sampler.running
    s = sampler.summary
    assert s is not None and s.samples >= 2 and s.errors == []
    assert s["vda.w_s"].max == 0.0
    assert len(list(csv.reader((tmp_path / "m.csv").open()))) == s.samples + 1
    assert s.sampler_cpu_s > 0


def test_errors_inside_the_thread_are_recorded_never_raised(tmp_path):
    calls = threading.Event()

    def broken_viewer(sample):
        calls.set()
        raise ValueError("viewer bug")

    fake = FakeProc(tmp_path)
    sampler = Sampler(0.2, ["vda"], host=fake.host, on_sample=broken_viewer).start()
    assert calls.wait(timeout=30)
    (tmp_path / "proc" / "diskstats").unlink()     # the file vanishes mid-run
    s = sampler.stop()
    assert any("viewer bug" in e for e in s.errors)
    assert not sampler.running


def test_to_figures_rows_for_the_store(tmp_path):
    fake = FakeProc(tmp_path)
    sampler = Sampler(1.0, ["dm-0"], host=fake.host, clock=fake.clock).start(background=False)
    fake.advance(4.0, diskstats=(LAB / "diskstats-2.txt").read_text())
    sampler.sample_once()
    figures = {name: (value, unit) for name, value, unit in sampler.stop().to_figures()}
    assert figures["dm-0.wMB_s.avg"] == (pytest.approx(12.5), "MiB/s")
    assert figures["dm-0.w_await.p95"][1] == "ms"
    assert figures["dm-0.util.max"] == (pytest.approx(69.2), "%")
    assert figures["cpu_iowait.avg"][1] == "%" and figures["load1.max"] == (0.5, "load")
    assert len(figures) == 3 * (11 + 12)   # avg, p95, max of 11 host and 12 device figures
