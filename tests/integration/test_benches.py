"""Every script in bench/ still measures: run with its smallest parameters, it exits 0 and
prints its ratio lines ('ratio LABEL: MEDIAN (MIN-MAX, N pairs)', bench/_common.py).

No figure is checked (a few objects or seconds measure nothing worth comparing), only that
the bench runs end to end against its reference. The benches are found by globbing bench/,
so a new bench fails here until it has an entry in SMOKE. A bench that cannot run on this
machine (not root, MinIO not built, ...) exits 77 with the reason, and is skipped with it.
Each bench runs with TMPDIR in the test's folder, so what it makes in temporary folders is
made there; it removes what it made (loop devices, namespaces, VMs) itself.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
CANNOT_RUN = 77   # bench/_common.py
RATIO_LINE = re.compile(r"^\s*ratio (?P<label>.+?): (?P<median>-?\d+\.\d+|nan) \(", re.MULTILINE)


@dataclass(frozen=True)
class Smoke:
    args: tuple[str, ...]        # "{tmp}" is the test's own folder
    ratios: tuple[str, ...]      # each must start the label of a ratio line the bench prints
    root: bool = False           # makes loop devices, mounts or namespaces: marked root
    vm: bool = False             # boots the lab VM: marked vm (and root)
    timeout: float = 300


SMOKE = {
    "aa": Smoke(("--pairs", "1", "--size", "16MiB", "--runtime", "1s", "--ramp", "0", "--dir", "{tmp}"),
                ("A/A comparisons with no difference beyond noise / all",)),
    "aging": Smoke(("--full-size", "32MiB", "--days", "8", "--pairs", "1", "--space-full-size", "16MiB",
                    "--space-days", "3"),
                   ("fio + cp --reflink time / aging run time",
                    "measured/closed-form space, forever-forward, 7 dailies, block clone"), root=True),
    "agent_flood": Smoke(("--requests", "5", "--idle", "20", "--rounds", "1"),
                         ("answer time with the flood / without",)),
    "agent_overhead": Smoke(("--seconds", "2", "--window", "1"), ("agent CPU / wall time",)),
    "blockclone": Smoke(("--size", "8MiB", "--increments", "1", "--pairs", "2"),
                        ("workload/cp throughput, xfs", "workload/cp throughput, btrfs"), root=True),
    "cli_startup": Smoke(("--rounds", "1"), ("CPU of backupbench run --help / its libraries'",)),
    "default_run": Smoke(("--pairs", "1", "--size", "16MiB", "--smoke", "--dir", "{tmp}"),
                         ("default run wall time / the old default's",)),
    "device_checks": Smoke(("--devices", "2", "--pairs", "1"),
                           ("tool runs, one look / device by device", "wall time, one look / device by device"),
                           root=True),
    "fio_overhead": Smoke(("--pairs", "1", "--size", "16MiB", "--runtime", "1s", "--dir", "{tmp}"),
                          ("backupbench/fio active-full", "backupbench/fio synthetic-full")),
    "sweep": Smoke(("--pairs", "1", "--size", "8MiB", "--runtime", "1s", "--operations", "restore-random",
                    "--dir", "{tmp}"), ("9 plain runs / 3 x 3 sweep, wall time",)),
    "live_display": Smoke(("--rounds", "1", "--seconds", "2", "--phases", "1"), ("live display CPU / one core",)),
    "monitor_overhead": Smoke(("--devices", "2", "--seconds", "3"), ("sampler CPU / wall time per interval",),
                              root=True),
    "ramp": Smoke(("--runs", "2", "--size", "16MiB", "--runtime", "1s", "--operations", "active-full,restore-random",
                   "--dir", "{tmp}"),
                  ("CV with ramp / without, active-full", "CV with ramp / without, restore-random")),
    "restore_files": Smoke(("--pairs", "1", "--size", "16MiB", "--runtime", "1s", "--dir", "{tmp}"),
                           ("backupbench/fio restore-sequential", "backupbench/fio restore-random")),
    "s3": Smoke(("--pairs", "1", "--objects", "16", "--streams", "4", "--dir", "{tmp}"),
                ("engine/reference PUT x4", "engine/reference GET x4")),
    "s3_hosts": Smoke(("--objects", "32", "--object-size", "64KiB", "--concurrency", "4", "--repeat", "1"),
                      ("2 agents / one host, put", "4 agents / one host, get"), root=True),
    "s3_lock": Smoke(("--pairs", "1", "--objects", "16", "--streams", "4", "--size", "64KiB", "--dir", "{tmp}"),
                     ("PUT MiB/s with lock / without",)),
    "s3_servers": Smoke(("--pairs", "1", "--objects", "8", "--object-size", "64KiB", "--streams", "2",
                         "--dir", "{tmp}"),
                        ("engine/reference PUT, minio", "engine/reference GET, moto")),
    "signal_trials": Smoke(("--trials", "1", "--workloads", "kb2014", "--no-s3"),
                           ("stop time / reference run, kb2014 SIGINT",)),
    "smallfiles": Smoke(("--pairs", "2", "--files", "200", "--folders", "10", "--disk-dir", "{tmp}"),
                        ("engine/C files/s, tmpfs create", "engine/C files/s, disk update-1")),
    "lab": Smoke(("--boots", "1", "--fna-runs", "1", "--runtime", "2", "--work-dir", "{tmp}"),
                 ("field note A striped/linear",), vm=True, timeout=900),
    "lab_seek": Smoke(("--rounds", "1", "--runtime", "2", "--disk-size", "1GiB", "--work-dir", "{tmp}"),
                      ("sequential 512 KiB read MiB/s / model's", "random 512 KiB read MiB/s / model's",
                       "random 512 KiB read MiB/s at queue depth 32 / model's", "nbdkit CPU / QEMU CPU",
                       "field note A striped/linear, 4 jobs x 16, queue depth 32",
                       "field note A striped/linear, 16 jobs x 1, queue depth 1"), vm=True, timeout=1500),
    "aging_lab": Smoke(("--rounds", "1", "--days", "8", "--full-size", "32MiB", "--work-dir", "{tmp}"),
                       ("xfs forward-synthetic, newest full restore-sequential day 8 / day 0",
                        "xfs forever-forward, newest full restore-random day 8 / day 0"), vm=True, timeout=1500),
    "lab_ab": Smoke(("--pairs", "1", "--size", "64MiB", "--runtime", "1s", "--work-dir", "{tmp}"),
                    ("fast/slow restore-sequential MiB/s",), vm=True, timeout=900),
    "field_note_d": Smoke(("--rate", "50MiB/s", "--objects", "8", "--concurrency", "4", "--rounds", "2",
                           "--work-dir", "{tmp}"), ("PUT / member ceiling, minio-ec", "GET / member ceiling, draid2"),
                          vm=True, timeout=2400),
    "rebuild": Smoke(("--rate", "200MiB/s", "--fill", "64MiB", "--disk-size", "256MiB", "--size", "32MiB",
                      "--runtime", "1s", "--rounds", "1", "--work-dir", "{tmp}"),
                     ("rebuild time under load / idle, raid6", "idle rebuild time / RAIDZ2's, draid2"),
                     vm=True, timeout=2400),
}


def benches() -> list[str]:
    """Every bench script; bench/_*.py are what they share, not benches."""
    return sorted(path.stem for path in BENCH.glob("*.py") if not path.name.startswith("_"))


def smoke_params() -> list:
    params = []
    for name in benches():
        smoke = SMOKE.get(name)
        marks = []
        if smoke is not None and (smoke.root or smoke.vm):
            marks.append(pytest.mark.root)
        if smoke is not None and smoke.vm:
            marks += [pytest.mark.vm, pytest.mark.lab_bench]   # make bench-smoke-lab, not make test
        params.append(pytest.param(name, marks=marks, id=name))
    return params


def test_every_smoke_entry_is_a_bench():
    assert set(SMOKE) <= set(benches()), f"entries for benches that are gone: {sorted(set(SMOKE) - set(benches()))}"


@pytest.mark.real
@pytest.mark.parametrize("name", smoke_params())
def test_bench_still_measures(name: str, tmp_path: Path):
    smoke = SMOKE.get(name)
    assert smoke is not None, (f"bench/{name}.py has no smoke entry: add its smallest parameters and ratio "
                               f"line to SMOKE in {Path(__file__).name}")
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in smoke.args]
    env = {**os.environ, "TMPDIR": str(tmp_path),
           "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT / "src"), os.environ.get("PYTHONPATH"))))}
    done = subprocess.run([sys.executable, str(BENCH / f"{name}.py"), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=smoke.timeout, stdin=subprocess.DEVNULL)
    if done.returncode == CANNOT_RUN:
        pytest.skip(done.stderr.strip().splitlines()[-1])
    tail = f"\n--- stdout ---\n{done.stdout[-3000:]}\n--- stderr ---\n{done.stderr[-3000:]}"
    assert done.returncode == 0, f"bench/{name}.py exited {done.returncode}{tail}"
    labels = [match["label"] for match in RATIO_LINE.finditer(done.stdout)]
    for wanted in smoke.ratios:
        assert any(label.startswith(wanted) for label in labels), f"no ratio line '{wanted}...' in the output{tail}"
