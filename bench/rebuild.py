"""Issue 13's benchmark: one failed disk of the same 8 throttled lab disks as md RAID6, RAIDZ2
(each onto a ninth, replacement disk) and dRAID2 with one distributed spare
(draid2:5d:8c:1s), rebuilt idle and under restore load (restore-random repeated until the
rebuild ends), and the restore speed during it.

Usage: python bench/rebuild.py [--rate 20MiB/s] [--fill 1GiB] [--disk-size 1GiB] [--rounds 3]
                               [--size 256MiB] [--runtime 5s]

Reference, measured in the same run: each layout's healthy restore-random (the rebuilding
figure is shown as a ratio of it), and RAIDZ2's rebuild time (dRAID2's is shown as a ratio
of it: field note D's claim is that a distributed spare rebuilds faster, which the model of
`size rebuild` puts at (c - 1) / (d + 1) = 7/6 for these disks). The same `fill` of data is on
each layout before the failure (ZFS rebuilds only allocated data; md every member in full).
Each round is two lab runs of about 10 minutes each (idle first in odd rounds, under load
first in even ones); the ratios are taken within a round and printed as the median of the
rounds with the min-max. Exits 0 when it measured.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

from _common import lab_run, ratio_line, require
from backupbench.units import MiB

DISKS = [f"/dev/vd{letter}" for letter in "abcdefghi"]
MEMBERS, SPARE = DISKS[:8], DISKS[8]


def recipe(load: str, fill: str, size: str = "256MiB", runtime: str = "5s") -> str:
    common = f'fill = "{fill}", rebuild_load = "{load}"'
    zfs_props = 'ashift = 12\nproperties = { recordsize = "1M", atime = "off", primarycache = "metadata" }\n'
    return (f'name = "rebuild-{load}"\ndevices = {json.dumps(DISKS)}\n'
            f'[[layout]]\nname = "raid6"\nkind = "mdraid"\nlevel = 6\nchunk = "64k"\ndevices = {json.dumps(MEMBERS)}\n'
            f'filesystem = {{ type = "xfs" }}\nfault = {{ fail = "/dev/vdc", replace = "{SPARE}", {common} }}\n'
            f'[[layout]]\nname = "raidz2"\nkind = "zfs"\nvdev = "raidz2"\n{zfs_props}devices = {json.dumps(MEMBERS)}\n'
            f'fault = {{ fail = "/dev/vdc", replace = "{SPARE}", {common} }}\n'
            f'[[layout]]\nname = "draid2"\nkind = "zfs"\nvdev = "draid2"\ndraid_data = 5\ndraid_spares = 1\n'
            f'{zfs_props}devices = {json.dumps(MEMBERS)}\nfault = {{ fail = "/dev/vdc", {common} }}\n'
            f'[[workload]]\nkind = "kb2014"\noperations = ["restore-random"]\nsize = "{size}"\nruntime = "{runtime}"\n')


def run_lab(text: str, rate: str, disk_size: str, work: Path) -> tuple[float, dict]:
    seconds, results = lab_run(text, f"9x{disk_size}", rate, work)
    with sqlite3.connect(results / "results.db") as db:
        [(run_id,)] = db.execute("SELECT run_id FROM runs").fetchall()
    return seconds, json.loads((results / "runs" / run_id / "result.json").read_text())


def by_layout(run: dict) -> dict[str, dict[str, dict]]:
    found: dict[str, dict[str, dict]] = {}
    for op in run["operations"]:
        found.setdefault(op["detail"]["layout"], {})[op["detail"].get("state")] = op
    return found


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", default="20MiB/s")
    parser.add_argument("--fill", default="1GiB")
    parser.add_argument("--disk-size", default="1GiB", help="each of the 9 lab disks")
    parser.add_argument("--size", default="256MiB", help="the restore-random test file")
    parser.add_argument("--runtime", default="5s", help="each restore-random run")
    parser.add_argument("--rounds", type=int, default=3, help="times both lab runs are made")
    parser.add_argument("--work-dir", type=Path, default=None)
    args = parser.parse_args()
    args.rounds = max(1, args.rounds)
    return args


def one_round(args: argparse.Namespace, number: int, work: Path) -> dict[str, tuple[float, dict]]:
    loads = ("none", "repeat") if number % 2 else ("repeat", "none")
    return {load: run_lab(recipe(load, args.fill, args.size, args.runtime), args.rate, args.disk_size, work)
            for load in loads}


def figures(runs: dict[str, tuple[float, dict]], name: str) -> dict[str, float]:
    """One layout's figures of one round (nan where the run has none)."""
    nan = float("nan")
    idle, loaded = by_layout(runs["none"][1]), by_layout(runs["repeat"][1])
    quiet = idle[name]["rebuild"]["figures"].get("rebuild_seconds") or nan
    busy = loaded[name]["rebuild"]["figures"].get("rebuild_seconds") or nan
    reference = idle["raidz2"]["rebuild"]["figures"].get("rebuild_seconds") or nan
    healthy = loaded[name]["healthy"]["figures"]["effective_bw"] / MiB
    during = loaded[name]["rebuilding"]["figures"]["effective_bw"] / MiB
    return {"idle": quiet, "busy": busy, "load/idle": busy / quiet, "x raidz2": quiet / reference,
            "healthy": healthy, "during": during, "ratio": during / healthy,
            "copied": idle[name]["rebuild"]["figures"].get("rebuild_bytes", 0) / MiB}


def main() -> int:
    args = parse_args()
    require("rebuild", root=True, tools=("qemu-system-x86_64", "busybox", "depmod", "dpkg-deb"))
    work = Path(tempfile.mkdtemp(prefix="bench-rebuild-", dir=args.work_dir))
    try:
        rounds = [one_round(args, number, work) for number in range(1, args.rounds + 1)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"8 disks x {args.disk_size} at {args.rate}, {args.fill} written before the failure; {args.rounds} "
          f"round{'s' if args.rounds > 1 else ''} of two lab runs, idle and under restore load: " + ", ".join(
              f"{runs['none'][0]:.0f} s + {runs['repeat'][0]:.0f} s" for runs in rounds))
    print(f"{'round':<5} {'layout':<7} {'rebuild idle':>12} {'under load':>10} {'load/idle':>9} {'x raidz2':>8} "
          f"{'restore healthy':>15} {'restore rebuilding':>18} {'ratio':>6} {'copied':>7}")
    table = {name: [figures(runs, name) for runs in rounds] for name in ("raid6", "raidz2", "draid2")}
    for name, per_round in table.items():
        for number, f in enumerate(per_round, 1):
            print(f"{number:<5} {name:<7} {f['idle']:11.1f}s {f['busy']:9.1f}s {f['load/idle']:9.2f} "
                  f"{f['x raidz2']:8.2f} {f['healthy']:15.1f} {f['during']:18.1f} {f['ratio']:6.2f} "
                  f"{f['copied']:6.0f}M")
    print("x raidz2 = idle rebuild time / RAIDZ2's (below 1: faster); ratio = restore during the rebuild / healthy; "
          "copied: bytes the idle rebuild copied")
    for name, per_round in table.items():
        for key, label in (("load/idle", "rebuild time under load / idle"), ("x raidz2", "idle rebuild time / RAIDZ2's"),
                           ("ratio", "restore MiB/s while rebuilding / healthy")):
            values = [f[key] for f in per_round if f[key] == f[key]]   # rounds without the figure left out
            if values and not (key == "x raidz2" and name == "raidz2"):
                print(ratio_line(f"{label}, {name}", values, what="rounds", digits=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
