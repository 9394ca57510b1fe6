"""Sweep overhead: a 3 x 3 `backupbench sweep`'s wall time against 9 plain `backupbench run`s of
the same points, in the same bench (issue 42).

Usage: python bench/sweep.py [--pairs 3] [--size 64MiB] [--runtime 2s] [--operations LIST] [--dir DIR]
Each pair runs the sweep (`--over iodepth=1,2,4 --over jobs=1,2,3`, 9 points) and, one after
another, the 9 runs a user would type by hand for the same points (`run --iodepth I --jobs J`),
each as its own process, as a user runs them; which of the two goes first alternates with the
pair, so a drift of the machine favours neither. Same target, sizes, runtime and samples (one:
--runtime is given), no ramp (a second a phase saved, the same on both sides).
Prints one ratio line: per pair, the 9 runs' wall time / the sweep's (goal >= 0.95: the sweep
costs at most 5% more than the runs it replaces); and the medians in seconds. Exits 0 when it
measured, whether or not the goal was met.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ratio_line

GOAL = 0.95
IODEPTHS, JOBS = ("1", "2", "4"), ("1", "2", "3")


def _backupbench(args: list[str]) -> None:
    subprocess.run([sys.executable, "-m", "backupbench", *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, text=True)


def _common(target: Path, results: Path, args: argparse.Namespace) -> list[str]:
    return [str(target), "--size", args.size, "--runtime", args.runtime, "--ramp", "0", "--operations",
            args.operations, "--quiet", "--results", str(results)]


def sweep_seconds(target: Path, results: Path, args: argparse.Namespace) -> float:
    started = time.monotonic()
    _backupbench(["sweep", *_common(target, results, args), "--over", "iodepth=" + ",".join(IODEPTHS),
                  "--over", "jobs=" + ",".join(JOBS)])
    return time.monotonic() - started


def plain_seconds(target: Path, results: Path, args: argparse.Namespace) -> float:
    started = time.monotonic()
    for iodepth in IODEPTHS:
        for jobs in JOBS:
            _backupbench(["run", *_common(target, results, args), "--iodepth", iodepth, "--jobs", jobs])
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--size", default="64MiB")
    parser.add_argument("--runtime", default="2s")
    parser.add_argument("--operations", default="active-full,restore-random")
    parser.add_argument("--dir", type=Path, default=None, help="the target directory's parent (default: a temporary one)")
    args = parser.parse_args()
    ratios, sweeps, plains = [], [], []
    with tempfile.TemporaryDirectory(prefix="bb-sweep-", dir=args.dir) as work:
        target, results = Path(work) / "target", Path(work) / "results"
        target.mkdir()
        for pair in range(args.pairs):
            if pair % 2:
                plain = plain_seconds(target, results, args)
                swept = sweep_seconds(target, results, args)
            else:
                swept = sweep_seconds(target, results, args)
                plain = plain_seconds(target, results, args)
            print(f"pair {pair + 1}: sweep {swept:.1f} s, 9 runs {plain:.1f} s")
            sweeps.append(swept)
            plains.append(plain)
            ratios.append(plain / swept)
    print(f"medians: sweep {statistics.median(sweeps):.1f} s, 9 plain runs {statistics.median(plains):.1f} s")
    ok = statistics.median(ratios) >= GOAL
    print(ratio_line("9 plain runs / 3 x 3 sweep, wall time", ratios, f">= {GOAL}", "ok" if ok else "UNDER GOAL",
                     what="pairs"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
