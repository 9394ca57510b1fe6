"""Other processes over a phase (monitor/others.py): the CPU and I/O of processes that are not
the run's own, from two snapshots; and the phase flagged disturbed in every output."""

from __future__ import annotations

import pytest

from backupbench.monitor.others import Disturbance, Process, Snapshot, between, own

HZ = 100.0
ROOT = 100


def snap(at: float, busy: int, *processes: Process) -> Snapshot:
    return Snapshot(at, busy, {p.pid: p for p in processes})


def test_the_runs_own_processes_are_it_and_its_descendants():
    found = own({p.pid: p for p in (Process(100, 1, "backupbench", 0, 0, 0), Process(101, 100, "fio", 0, 0, 0),
                                    Process(102, 101, "fio", 0, 0, 0), Process(200, 1, "stress", 0, 0, 0))}, ROOT)
    assert found == {100, 101, 102}


def test_other_cpu_is_the_machines_busy_time_less_the_runs_own_reaped_children_included():
    # 10 s: the machine was busy 1,500 ticks. The run: 300 of its own, and fio (alive at the start
    # with 100 ticks) reaped by the end with 500 in all, so 400 more, in the run's cutime.
    start = snap(0.0, 10_000, Process(100, 1, "backupbench", 1000, 0, 0), Process(101, 100, "fio", 100, 0, 0),
                 Process(200, 1, "stress", 5000, 0, 10 * 2**20))
    end = snap(10.0, 11_500, Process(100, 1, "backupbench", 1300, 500, 0),
               Process(200, 1, "stress", 5800, 0, 110 * 2**20))
    found = between(start, end, ROOT, HZ)
    assert found.cpu_cores == pytest.approx((1500 - 300 - 400) / HZ / 10)   # 0.8 cores
    assert found.io_bps == pytest.approx(100 * 2**20 / 10)
    assert found.top == (("stress", pytest.approx(0.8), pytest.approx(10 * 2**20)),)


def test_a_pid_reused_by_another_program_is_not_read_as_one_process():
    start = snap(0.0, 0, Process(100, 1, "backupbench", 0, 0, 0), Process(300, 1, "old", 0, 0, 0))
    end = snap(1.0, 0, Process(100, 1, "backupbench", 0, 0, 0), Process(300, 1, "new", 900, 0, 2**30))
    assert between(start, end, ROOT, HZ).io_bps == 0


@pytest.mark.parametrize("cores,bps,own,disks,disturbed", [
    (0.1, 0.0, 0.0, None, False),
    (0.3, 0.0, 0.0, None, True),
    (0.0, 8 * 2**20, 0.0, None, True),                    # disks unknown: other processes' own I/O
    (0.0, 2 * 2**20, 0.0, None, False),
    (0.0, 500 * 2**20, 200 * 2**20, 208 * 2**20, False),  # elsewhere: the target's disks moved the run's own
    (0.0, 0.0, 170 * 2**20, 200 * 2**20, True),           # 30 MiB/s on the target's disks were not the run's
])
def test_disturbed_past_a_quarter_core_or_four_mib_and_a_tenth_of_the_disks(cores, bps, own, disks, disturbed):
    reason = Disturbance(10.0, cores, bps, (("stress", cores, bps),), own_io_bps=own).reason(disks)
    assert (reason is not None) == disturbed
    if disturbed:
        assert "stress" in reason


def test_a_disturbed_phase_is_flagged_in_its_table_document_and_csv_and_the_headline_says_so(tmp_path):
    import csv
    import io

    from backupbench.analysis.headline import run_headline
    from backupbench.report.tables import run_tables
    from backupbench.results import document
    from backupbench.results.csvout import write_figures
    from backupbench.results.model import COMPLETE, OperationRecord, RunRecord

    op = OperationRecord("active-full", "write qd1", COMPLETE, figures={"effective_bw": 2**20, "write_bw": 2**20})
    op.others.add("other processes took 0.80 cores: stress (0.80 cores, 0.0 MiB/s)")
    op.notes = [op.others.note()]
    run = RunRecord("r", "kb2014", "/t", {}, status=COMPLETE, operations=[op])
    assert run_tables(run)[0].rows[0].cells[-1] == "disturbed"
    phase = document.run_document(run)["phases"][0]
    assert phase["disturbed"] is True and "stress" in phase["disturbed_reason"]
    stream = io.StringIO()
    write_figures([run], stream)
    assert {row["disturbed"] for row in csv.DictReader(io.StringIO(stream.getvalue()))} == {"yes"}
    headline = run_headline(run)
    assert headline.bad and "not fit for decisions" in headline.text and "stress" in headline.text
    assert run.all_notes == ["active-full: disturbed: other processes took 0.80 cores: stress (0.80 cores, 0.0 MiB/s); "
                             "its figures are not fit for decisions"]


def test_the_targets_disks_are_read_at_the_same_two_moments_as_the_runs_own_bytes():
    """A lab restore: fio took 2 of the phase's 6 s to start and moved 748 MiB in the other 4 (187
    MiB/s while it read). Against the monitor's mean over those 4 s the run's 125 MiB/s over all 6
    left 62 MiB/s of "others"; over the same 6 s the disks moved what the run read, and nothing else."""
    moved = 748 * 2**20
    start = snap(0.0, 0, Process(ROOT, 1, "backupbench", 0, 0, 0))
    start = Snapshot(start.at, start.busy_ticks, start.processes, disk_bytes=10 * 2**30)
    end = Snapshot(6.0, 0, {ROOT: Process(ROOT, 1, "backupbench", 0, 0, moved)}, disk_bytes=10 * 2**30 + moved)
    found = between(start, end, ROOT, HZ)
    assert found.disks_bps == pytest.approx(moved / 6) == found.own_io_bps
    assert found.reason(found.disks_bps) is None
    assert found.reason(187 * 2**20) is not None   # the old reading: the disks' mean while fio read


def test_a_watch_reads_the_disks_beside_each_snapshot_and_without_them_says_unknown(monkeypatch):
    from backupbench.monitor import others

    moments = iter([0.0, 2.0, 0.0, 2.0])
    real_read = others.read
    monkeypatch.setattr(others, "read", lambda host=None, disk_bytes=None: real_read(
        host, clock=lambda: next(moments), disk_bytes=disk_bytes))
    counters = iter([100 * 2**20, 350 * 2**20])
    found = others.OthersWatch(root=ROOT, disk_bytes=lambda: next(counters)).start().stop()
    assert found.disks_bps == pytest.approx(125 * 2**20)   # 250 MiB over the watch's 2 s
    assert others.OthersWatch(root=ROOT).start().stop().disks_bps is None


def test_the_kernels_threads_are_no_ones_cpu():
    """btrfs verifying the run's reads in its endio workers, ZFS's txg_sync: the storage serving
    the run, not another process beside it (a lab run's btrfs restores read 0.5 cores of those)."""
    start = snap(0.0, 1_000, Process(ROOT, 1, "backupbench", 0, 0, 0), Process(2, 0, "kthreadd", 0, 0, 0),
                 Process(40, 2, "kworker/u4:0-btrfs-endio", 100, 0, 0), Process(41, 2, "txg_sync", 10, 0, 0),
                 Process(300, 1, "updatedb", 0, 0, 0))
    # The kworker now names other work; another one was started by the workqueue meanwhile.
    end = snap(1.0, 1_100, Process(ROOT, 1, "backupbench", 0, 0, 0), Process(2, 0, "kthreadd", 0, 0, 0),
               Process(40, 2, "kworker/u4:0-events_unbound", 150, 0, 0), Process(41, 2, "txg_sync", 20, 0, 0),
               Process(42, 2, "kworker/u4:3-btrfs-endio", 20, 0, 0), Process(300, 1, "updatedb", 20, 0, 0))
    found = between(start, end, ROOT, HZ)
    assert found.cpu_cores == pytest.approx(0.2)   # 100 busy ticks less the kernel threads' 80: updatedb's
    assert [name for name, _, _ in found.top] == ["updatedb"]
