"""Restores of an existing file through backupbench against plain fio reading the same file with
the same read-only job (issue 39's benchmark): the speed backupbench reports over the speed fio
reports alone, per operation, in alternating pairs (the order swapped each pair, so drift
favours neither side). Goal: >= 0.97.

    python bench/restore_files.py [--pairs 3] [--size 1GiB] [--runtime 5s] [--dir DIR]

The file is made once in DIR (default: the current directory, which must be on a real disk,
not tmpfs) and read only; its hash is checked unchanged at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import ROOT, ratio_line, require, spread

sys.path.insert(0, str(ROOT / "src"))
from backupbench import units  # noqa: E402

OPERATIONS = ("restore-sequential", "restore-random")
GOAL = 0.97
MIB = 2**20


def backupbench(*args: str, results: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "backupbench", *args, "--results", str(results)],
                          capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    return done.stdout


def through_backupbench(op: str, backup: Path, runtime: str, results: Path) -> tuple[float, str]:
    """The effective speed backupbench stored, and the job file it ran (for fio to run alone)."""
    data = json.loads(backupbench("run", "--workload", "restore", str(backup), "--operations", op, "--runtime",
                                  runtime, "--json", "--quiet", results=results))
    value = next(f["value"] for f in data["phases"][0]["figures"] if f["name"] == "effective_bw")
    return value, str(results / "runs" / data["run"]["id"] / f"{op}.fio")


def through_fio(job_file: str) -> float:
    # In the job's own folder: its 1 s logs (write_lat_log) are named relative to fio's cwd.
    done = subprocess.run(["fio", "--readonly", "--output-format=json", job_file], capture_output=True, text=True,
                          check=True, cwd=Path(job_file).parent)
    return float(json.loads(done.stdout)["jobs"][0]["read"]["bw_bytes"])


def _make_file(path: Path, size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "wb") as handle:
        for _ in range(size // MIB):
            block = os.urandom(MIB)
            digest.update(block)
            handle.write(block)
        handle.flush()
        os.fsync(handle.fileno())
    return digest.hexdigest()


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(MIB), b""):
            digest.update(block)
    return digest.hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--size", default="1GiB")
    parser.add_argument("--runtime", default="5s")
    parser.add_argument("--dir", type=Path, default=Path.cwd())
    args = parser.parse_args()
    require("restore_files", tools=("fio",))
    work = Path(tempfile.mkdtemp(prefix="bb-bench-restore-", dir=args.dir))
    try:
        backup = work / "full.vbk"
        made = _make_file(backup, units.parse_size(args.size))
        print(f"{'operation':<20}{'pair':>5}{'backupbench MiB/s':>19}{'fio MiB/s':>12}{'ratio':>8}")
        summary: dict[str, list[float]] = {}
        for op in OPERATIONS:
            ratios = []
            job = through_backupbench(op, backup, args.runtime, work / "results")[1]  # the job fio runs alone
            for pair in range(1, args.pairs + 1):
                if pair % 2:
                    bb, _ = through_backupbench(op, backup, args.runtime, work / "results")
                    ref = through_fio(job)
                else:
                    ref = through_fio(job)
                    bb, _ = through_backupbench(op, backup, args.runtime, work / "results")
                ratios.append(bb / ref)
                print(f"{op:<20}{pair:>5}{bb / MIB:>19,.1f}{ref / MIB:>12,.1f}{bb / ref:>8.3f}")
            summary[op] = ratios
        print()
        for op, ratios in summary.items():
            verdict = "ok" if spread(ratios).median >= GOAL else "BELOW GOAL"
            print(ratio_line(f"backupbench/fio {op}", ratios, f">= {GOAL}", verdict, what="pairs"))
        unchanged = _digest(backup) == made
        print(f"the file's hash after {2 * len(OPERATIONS) * args.pairs + len(OPERATIONS)} restores: "
              f"{'unchanged' if unchanged else 'CHANGED'}")
        return 0 if unchanged else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
