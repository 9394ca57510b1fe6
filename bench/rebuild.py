"""Issue 13's benchmark: one failed disk of the same 8 throttled lab disks as md RAID6, RAIDZ2
(each onto a ninth, replacement disk) and dRAID2 with one distributed spare
(draid2:5d:8c:1s), rebuilt idle and under restore load (restore-random repeated until the
rebuild ends), and the restore speed during it.

Usage: python bench/rebuild.py [--rate 20MiB/s] [--fill 1GiB]

Reference, measured in the same run: each layout's healthy restore-random (the rebuilding
figure is shown as a ratio of it), and RAIDZ2's rebuild time (dRAID2's is shown as a ratio
of it: field note D's claim is that a distributed spare rebuilds faster, which the model of
`size rebuild` puts at (c - 1) / (d + 1) = 7/6 for these disks). The same `fill` of data is on
each layout before the failure (ZFS rebuilds only allocated data; md every member in full).
Two lab runs of about 10 minutes each.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from backupbench.units import MiB

DISKS = [f"/dev/vd{letter}" for letter in "abcdefghi"]
MEMBERS, SPARE = DISKS[:8], DISKS[8]


def recipe(load: str, fill: str) -> str:
    common = f'fill = "{fill}", rebuild_load = "{load}"'
    zfs_props = 'ashift = 12\nproperties = { recordsize = "1M", atime = "off", primarycache = "metadata" }\n'
    return (f'name = "rebuild-{load}"\ndevices = {json.dumps(DISKS)}\n'
            f'[[layout]]\nname = "raid6"\nkind = "mdraid"\nlevel = 6\nchunk = "64k"\ndevices = {json.dumps(MEMBERS)}\n'
            f'filesystem = {{ type = "xfs" }}\nfault = {{ fail = "/dev/vdc", replace = "{SPARE}", {common} }}\n'
            f'[[layout]]\nname = "raidz2"\nkind = "zfs"\nvdev = "raidz2"\n{zfs_props}devices = {json.dumps(MEMBERS)}\n'
            f'fault = {{ fail = "/dev/vdc", replace = "{SPARE}", {common} }}\n'
            f'[[layout]]\nname = "draid2"\nkind = "zfs"\nvdev = "draid2"\ndraid_data = 5\ndraid_spares = 1\n'
            f'{zfs_props}devices = {json.dumps(MEMBERS)}\nfault = {{ fail = "/dev/vdc", {common} }}\n'
            '[[workload]]\nkind = "kb2014"\noperations = ["restore-random"]\nsize = "256MiB"\nruntime = "5s"\n')


def run_lab(text: str, rate: str, work: Path) -> tuple[float, dict]:
    path = work / "recipe.toml"
    path.write_text(text)
    results = work / f"results-{time.monotonic_ns()}"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "backupbench", "lab", str(path), "--disks", "9x1GiB",
                           "--disk-rate", rate, "--results", str(results), "--work-dir", str(work)],
                          stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"backupbench lab failed ({done.returncode}):\n{done.stdout[-3000:]}")
    with sqlite3.connect(results / "results.db") as db:
        [(run_id,)] = db.execute("SELECT run_id FROM runs").fetchall()
    return time.monotonic() - started, json.loads((results / "runs" / run_id / "result.json").read_text())


def by_layout(run: dict) -> dict[str, dict[str, dict]]:
    found: dict[str, dict[str, dict]] = {}
    for op in run["operations"]:
        found.setdefault(op["detail"]["layout"], {})[op["detail"].get("state")] = op
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", default="20MiB/s")
    parser.add_argument("--fill", default="1GiB")
    parser.add_argument("--work-dir", type=Path, default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-rebuild-", dir=args.work_dir))
    try:
        runs = {load: run_lab(recipe(load, args.fill), args.rate, work) for load in ("none", "repeat")}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    idle, loaded = by_layout(runs["none"][1]), by_layout(runs["repeat"][1])
    print(f"8 disks x 1 GiB at {args.rate}, {args.fill} written before the failure; lab runs "
          f"{runs['none'][0]:.0f} s (idle) and {runs['repeat'][0]:.0f} s (under restore load)")
    print(f"{'layout':<7} {'rebuild idle':>12} {'under load':>10} {'load/idle':>9} {'x raidz2':>8} "
          f"{'restore healthy':>15} {'restore rebuilding':>18} {'ratio':>6} {'copied':>7}")
    reference = idle["raidz2"]["rebuild"]["figures"].get("rebuild_seconds")
    for name in ("raid6", "raidz2", "draid2"):
        quiet = idle[name]["rebuild"]["figures"].get("rebuild_seconds")
        busy = loaded[name]["rebuild"]["figures"].get("rebuild_seconds")
        healthy = loaded[name]["healthy"]["figures"]["effective_bw"] / MiB
        during = loaded[name]["rebuilding"]["figures"]["effective_bw"] / MiB
        print(f"{name:<7} {quiet or float('nan'):11.1f}s {busy or float('nan'):9.1f}s "
              f"{(busy / quiet) if quiet and busy else float('nan'):9.2f} "
              f"{(quiet / reference) if quiet and reference else float('nan'):8.2f} {healthy:15.1f} {during:18.1f} "
              f"{during / healthy:6.2f} {idle[name]['rebuild']['figures'].get('rebuild_bytes', 0) / MiB:6.0f}M")
    print("x raidz2 = idle rebuild time / RAIDZ2's (below 1: faster); ratio = restore during the rebuild / healthy; "
          "copied: bytes the idle rebuild copied")
    return 0


if __name__ == "__main__":
    sys.exit(main())
