"""What the HTML report's unit tests share: runs with monitor CSVs as a real run leaves them,
stored in a results folder, and the report command invoked in-process."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from click.testing import CliRunner

from backupbench.cli.report_cmd import report_command
from backupbench.results.location import run_folder
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
from backupbench.results.phase import MonitorAccount
from backupbench.results.store import Store

MiB = 2**20

HOSTILE = '<script>alert("x")</script>'
CSV_HEADER = ("timestamp,elapsed_s,%user,%system,%iowait,%steal,%idle,mem_used_MiB,%memused,swap_used_MiB,"
              "ldavg-1,ldavg-5,ldavg-15")
DISK_COLUMNS = ("r/s", "w/s", "rMB/s", "wMB/s", "r_await", "w_await", "aqu-sz", "%util")


def monitor_csv(devices: list[str], busy: dict[str, float], samples: int = 5, read: bool = False) -> str:
    """A monitor CSV as monitor/csvlog.py writes it: `busy` MiB/s per device, others idle."""
    header = CSV_HEADER + "".join(f",{d}:{c}" for d in devices for c in DISK_COLUMNS)
    rows = [header]
    for i in range(1, samples + 1):
        cells = [f"2026-11-22T00:00:{i:02d}.000+00:00", f"{i:.3f}", "3.00", "4.00", f"{10 + i:.2f}", "0.00",
                 "80.00", "1500.00", "6.00", "0.00", "1.00", "1.00", "1.00"]
        for device in devices:
            mb = busy.get(device, 0.0)
            rmb, wmb = (mb, 0.0) if read else (0.0, mb)
            cells += [f"{rmb * 2:.2f}", f"{wmb * 2:.2f}", f"{rmb:.2f}", f"{wmb:.2f}", "1.00", "150.00", "1.00",
                      f"{min(100.0, mb * 2):.2f}"]
        if i == 3 and devices:
            cells[-1] = ""  # a missing value, as the monitor writes for an absent device
        rows.append(",".join(cells))
    return "\n".join(rows) + "\n"


def fio_op(name: str, pattern: str, read: float, write: float, effective: float, p99_ms: float,
           layout: str = "") -> OperationRecord:
    figures = {"effective_bw": effective * MiB, "runtime": 10.0}
    if read:
        figures.update(read_bw=read * MiB, read_iops=read * 2, read_p99_lat=p99_ms * 1e6)
    if write:
        figures.update(write_bw=write * MiB, write_iops=write * 2, write_p99_lat=p99_ms * 1.5e6)
    figures.update(members_util=55.5, members_w_await=1.25)
    return OperationRecord(name=name, pattern=pattern, status=COMPLETE, figures=figures,
                           layout=layout, monitor=MonitorAccount(csv=[f"{name}.monitor.csv"]),
                           started_at="2026-11-22T00:00:00+00:00", finished_at="2026-11-22T00:00:10+00:00")


KB_PHASES = ("active-full", "synthetic-full", "restore-sequential", "restore-random")


def kb_run(results: Path, run_id: str = "20261122T000000-aaaa", target: str = "/srv/backups",
           scale: float = 1.0, phases: Sequence[str] = KB_PHASES) -> RunRecord:
    """A kb2014 run with its four phases, or those of them named in `phases` (each phase's
    monitor timeline is a chart a page renders: a test that needs one phase keeps one)."""
    run = RunRecord(
        run_id=run_id, kind="kb2014", target=target, status=COMPLETE,
        started_at="2026-11-22T00:00:00+00:00", finished_at="2026-11-22T00:01:00+00:00",
        settings={"size": 1 * 2**30, "file_size": 1 * 2**30, "runtime": 10.0, "block_size": 512 * 1024,
                  "buffered": False, "engine": "libaio", "jobs": 1, "backup_size": None,
                  "monitor": {"monitor_interval": 1.0}},
        host={"hostname": "repo01", "kernel": "6.1.0-18-amd64", "cpus": 2, "memory_bytes": 8 * 2**30,
              "fio": "fio-3.33",
              "targets": {"target": {"path": target, "fs_type": "xfs", "block_device": "sdb"}},
              "device_stacks": {"target": {"describe": "/srv: xfs on sdb", "devices": ["sdb"], "members": ["sdb"]}}},
        notes=["The test file (1 GiB) is small for this storage: caches may serve it."],
    )
    run.operations = [
        fio_op("active-full", "write qd1", 0, 1728.7 * scale, 1728.7 * scale, 0.47),
        fio_op("synthetic-full", "randrw w50% qd4", 1448.1 * scale, 1450.6 * scale, 1449.4 * scale, 1.43),
        fio_op("restore-sequential", "read qd1", 2504.9 * scale, 0, 2504.9 * scale, 0.30),
        fio_op("restore-random", "randread qd1", 2603.7 * scale, 0, 2603.7 * scale, 0.25),
    ]
    run.operations = [op for op in run.operations if op.name in phases]
    folder = run_folder(results, run_id)
    folder.mkdir(parents=True)
    for op in run.operations:
        (folder / op.monitor_csv).write_text(
            monitor_csv(["sdb"], {"sdb": op.figures["effective_bw"] / MiB}, read="read" in op.pattern))
    (folder / "commands.txt").write_text(
        f"fio --output-format=json --output={folder}/active-full.json {folder}/active-full.fio\n")
    return run


def recipe_run(results: Path, run_id: str = "20261122T010000-bbbb") -> RunRecord:
    """Field note A: linear keeps one of four disks busy, striped all four."""
    disks = ["vda", "vdb", "vdc", "vdd"]
    run = RunRecord(run_id=run_id, kind="recipe", target="field-note-a", status=COMPLETE,
                    started_at="2026-11-22T01:00:00+00:00", finished_at="2026-11-22T01:05:00+00:00",
                    settings={"recipe": {"name": "field-note-a", "devices": ["/dev/" + d for d in disks],
                                         "layout": [{"name": "linear", "kind": "lvm-linear"},
                                                    {"name": "striped", "kind": "lvm-striped", "stripes": 4}]}},
                    host={"hostname": "lab", "device_stacks": {
                        name: {"describe": f"/run/backupbench/x/{name}: xfs on dm-0", "devices": ["dm-0", *disks],
                               "members": disks} for name in ("linear", "striped")}})
    folder = run_folder(results, run_id)
    for layout, speed, busy in (("linear", 50.3, {"vda": 50.0}), ("striped", 201.0, {d: 50.0 for d in disks})):
        (folder / layout).mkdir(parents=True)
        op = fio_op(f"{layout}/active-full", "write qd16 x4", 0, speed, speed, 759.17 if layout == "linear" else 189.79,
                    layout=layout)
        op.monitor = MonitorAccount(csv=[f"{layout}/active-full.monitor.csv"])
        run.operations.append(op)
        (folder / op.monitor_csv).write_text(monitor_csv(["dm-0", *disks], {"dm-0": speed, **busy}))
        (folder / layout / "commands.txt").write_text(f"fio {layout}/active-full.fio\n")
    return run


EXAMPLE_PLAN = Path(__file__).parents[1] / "examples" / "repository-plan.toml"


def policy_run(passing: bool = True, run_id: str = "20261126T000000-0badc0de") -> RunRecord:
    """A recipe run with a [policy] (examples/repository-plan.toml: four candidates on 24 x 16 TB),
    its dRAID2 measured; with `passing` a policy one of them meets (block clone, a 12 h window and
    RTO, a disk AFR: every column of the candidates table), else the example's, which none meets."""
    from backupbench.recipe import model

    recipe = model.load(EXAMPLE_PLAN).model_dump(mode="json")
    if passing:
        recipe["policy"].update(protected=20 * 10**12, block_clone=True, restore_size=5 * 10**12, rto=12 * 3600.0,
                                afr=2.0, horizon=5, growth=10.0, window=12 * 3600.0)
    run = RunRecord(run_id, "recipe", "lab", {"recipe": recipe}, status=COMPLETE,
                    started_at="2026-11-26T00:00:00+00:00", finished_at="2026-11-26T00:10:00+00:00")
    run.operations = [OperationRecord(name=f"draid2/{operation}", pattern="write qd1", status=COMPLETE,
                                      figures={"effective_bw": mib * MiB}, layout="draid2")
                      for operation, mib in (("active-full", 1400), ("synthetic-full", 380), ("incremental", 900),
                                             ("restore-sequential", 1200), ("restore-random", 300))]
    return run


def stored(tmp_path: Path, *runs: RunRecord) -> Path:
    store = Store(tmp_path / "results.db")
    for run in runs:
        store.create_run(run)
        for seq, op in enumerate(run.operations):
            store.save_operation(run.run_id, seq, op)
        store.finish_run(run)
    return tmp_path


def invoke(*args: str):
    return CliRunner().invoke(report_command, list(args), standalone_mode=False, catch_exceptions=True)
