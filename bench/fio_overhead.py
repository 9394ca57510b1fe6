"""Same job through `backupbench run` and through plain fio, alternating; prints the ratio.

Usage: python bench/fio_overhead.py [--pairs 3] [--size 1GiB] [--runtime 5s] [--dir DIR]
Goal: backupbench/fio >= 0.97 for active-full and synthetic-full. The reference (plain fio
with the job file from `backupbench export-fio`) is measured in the same run, alternating,
because absolute figures drift on these machines. A second reference runs the same job file
without `thread=1` (fio's default: a process per job), so the ratio also says whether running
jobs as threads (so that one SIGKILL ends them, see process.py) changes the figures.
Prints one ratio line per operation: the median of the pairs' ratios with their min-max.
Exits 0 when it measured, whether or not the goal was met.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import ratio_line, require, spread

OPERATIONS = ("active-full", "synthetic-full")
GOAL = 0.97
MIB = 2**20


def backupbench(*args: str, results: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "backupbench", *args, "--results", str(results)],
                          capture_output=True, text=True, check=True)
    return done.stdout


def effective(op: str, read_bw: float, write_bw: float) -> float:
    return write_bw if op == "active-full" else (read_bw + write_bw) / 2


def through_backupbench(op: str, directory: Path, size: str, runtime: str, results: Path) -> float:
    data = json.loads(backupbench("run", str(directory), "--operations", op, "--size", size,
                                  "--runtime", runtime, "--json", results=results))
    # The versioned --json document (docs/results.md): figures are {name, value, unit} entries.
    return next(f["value"] for f in data["phases"][0]["figures"] if f["name"] == "effective_bw")


def through_fio(job_file: Path, op: str, test_file: Path) -> float:
    # Same conditions as backupbench: a write-only suite writes a fresh file (fio creates it),
    # a suite with reads lays the file out first.
    test_file.unlink(missing_ok=True)
    if op != "active-full":
        subprocess.run(["fio", "--section", "layout", str(job_file)], capture_output=True, check=True)
    done = subprocess.run(["fio", "--output-format=json", "--section", op, str(job_file)],
                          capture_output=True, text=True, check=True)
    job = json.loads(done.stdout)["jobs"][0]
    return effective(op, job["read"]["bw_bytes"], job["write"]["bw_bytes"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--size", default="1GiB")
    parser.add_argument("--runtime", default="5s")
    parser.add_argument("--dir", type=Path, default=Path.cwd())
    args = parser.parse_args()
    require("fio_overhead", tools=("fio",))
    work = Path(tempfile.mkdtemp(prefix="bb-bench-", dir=args.dir))
    results = work / "results"
    try:
        job_file = work / "suite.fio"
        job_file.write_text(backupbench("export-fio", *OPERATIONS, "--path", str(work), "--size", args.size,
                                        "--runtime", args.runtime, results=results))
        forked = work / "suite-forked.fio"
        forked.write_text("".join(line for line in job_file.read_text().splitlines(keepends=True)
                                  if line.strip() != "thread=1"))
        # Each export names a file of its own (export_cmd._new_test_file): read it from the suite.
        test_file = Path(re.search(r"^filename=(.*)$", job_file.read_text(), re.M).group(1).replace("\\:", ":"))
        print(f"{'operation':<16}{'pair':>5}{'backupbench MiB/s':>19}{'fio MiB/s':>12}{'ratio':>8}"
              f"{'fio forked MiB/s':>18}{'ratio':>8}")
        summary: dict[str, tuple[list[float], list[float]]] = {}
        for op in OPERATIONS:
            ratios, forked_ratios = [], []
            for pair in range(1, args.pairs + 1):
                # Alternate which side goes first so that drift does not favour one.
                if pair % 2:
                    bb = through_backupbench(op, work, args.size, args.runtime, results)
                    ref = through_fio(job_file, op, test_file)
                    fork = through_fio(forked, op, test_file)
                else:
                    fork = through_fio(forked, op, test_file)
                    ref = through_fio(job_file, op, test_file)
                    bb = through_backupbench(op, work, args.size, args.runtime, results)
                ratios.append(bb / ref)
                forked_ratios.append(bb / fork)
                print(f"{op:<16}{pair:>5}{bb / MIB:>19,.1f}{ref / MIB:>12,.1f}{bb / ref:>8.3f}"
                      f"{fork / MIB:>18,.1f}{bb / fork:>8.3f}")
            summary[op] = (ratios, forked_ratios)
        print()
        for op, (ratios, forked_ratios) in summary.items():
            verdict = "ok" if spread(ratios).median >= GOAL else "BELOW GOAL"
            print(ratio_line(f"backupbench/fio {op}", ratios, f">= {GOAL}", verdict, what="pairs"))
            print(f"  against fio with forked jobs: {spread(forked_ratios, 'pairs').text()}")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
