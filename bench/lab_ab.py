"""A/B in the lab: one disk throttled at 50 vs 100 MiB/s, pairs of `backupbench lab` runs with
`repeat = 3`; does the stored verdict say about 2x faster with the true ratio 2.0 inside its
interval (issue 25)?

Usage: python bench/lab_ab.py [--pairs 3] [--slow 50MiB/s] [--fast 100MiB/s] [--operation restore-sequential]
                              [--size 128MiB] [--runtime 3s]
                              [--iodepth 4] [--disk-size 1GiB] [--work-dir DIR]

The layout is XFS on one lab disk, so the disk's QEMU throttle (`backupbench lab --disk-rate`)
sets the speed of a sequential KB2014 phase and the true ratio of the two sides is the ratio of
the throttles: 2.0 at the defaults. Each pair is two lab runs, each measuring the phase 3 times
(the recipe's `repeat = 3`; the test file written anew before each), the slow side first in odd
pairs and the fast one in even pairs so a drift of the machine favours neither. The fast run is
set against the slow one by `analysis.compare.speed_changes`, the call `show RUN --baseline`
makes, and the range of ratios the two 95% intervals allow is `analysis.noise.ratio_interval`.
A pair passes when its verdict says "faster" beyond noise and the true ratio is inside that
range. The reference is the slow side, measured in the same pair. Prints per pair the verdict,
the range and whether the true ratio is in it, the count of passing pairs (goal: all) and one
ratio line: fast/slow medians per pair. About 3 minutes a pair; exits 0 when it measured.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from _common import lab_run, ratio_line, require
from backupbench.analysis.compare import speed_changes
from backupbench.analysis.noise import ratio_interval
from backupbench.results.model import RunRecord
from backupbench.results.store import Store
from backupbench.units import MiB, parse_rate

LAYOUT = "disk"


def recipe(operation: str, size: str, runtime: str, iodepth: int) -> str:
    return (f'name = "lab-ab"\ndevices = ["/dev/vda"]\n'
            f'[[layout]]\nname = "{LAYOUT}"\nkind = "filesystem"\ndevices = ["/dev/vda"]\nfilesystem = {{ type = "xfs" }}\n'
            f'[[workload]]\nkind = "kb2014"\noperations = ["{operation}"]\nsize = "{size}"\nruntime = "{runtime}"\n'
            f'iodepth = {iodepth}\nrepeat = 3\n')


def run_lab(text: str, rate: str, disk_size: str, work: Path) -> tuple[float, RunRecord]:
    """One lab run of the recipe with its disk at `rate`: (seconds end to end, the stored run)."""
    seconds, results = lab_run(text, f"1x{disk_size}", rate, work)
    [run] = Store(results / "results.db").list_runs(1)
    return seconds, run


def one_pair(args: argparse.Namespace, number: int, work: Path) -> dict[str, tuple[float, RunRecord]]:
    text = recipe(args.operation, args.size, args.runtime, args.iodepth)
    sides = ("slow", "fast") if number % 2 else ("fast", "slow")
    return {side: run_lab(text, getattr(args, side), args.disk_size, work) for side in sides}


def judge(pair: dict[str, tuple[float, RunRecord]], truth: float) -> tuple[str, float, tuple[float, float] | None, bool]:
    """(the verdict's words, fast/slow medians, the range the intervals allow, passed)."""
    [change] = speed_changes(pair["fast"][1], pair["slow"][1])
    allowed = ratio_interval(change.current_samples, change.baseline_samples)
    passed = "faster" in change.wording and allowed is not None and allowed[0] <= truth <= allowed[1]
    return change.wording, change.factor, allowed, passed


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--slow", default="50MiB/s", help="the reference side's disk limit")
    parser.add_argument("--fast", default="100MiB/s", help="the other side's disk limit")
    parser.add_argument("--operation", default="restore-sequential",
                        choices=("active-full", "restore-sequential"), help="a sequential KB2014 phase")
    parser.add_argument("--size", default="128MiB", help="the test file")
    parser.add_argument("--iodepth", type=int, default=4,
                        help="queue depth: deep enough that the throttle, not one I/O's latency under TCG, binds")
    parser.add_argument("--runtime", default="3s", help="each measurement of the phase")
    parser.add_argument("--disk-size", default="1GiB")
    parser.add_argument("--work-dir", type=Path, default=None)
    args = parser.parse_args()
    args.pairs = max(1, args.pairs)
    return args


def main() -> int:
    args = parse_args()
    sys.stdout.reconfigure(line_buffering=True)   # each pair's lines as it ends: a pair takes minutes
    require("lab_ab", root=True, tools=("qemu-system-x86_64", "busybox", "depmod", "dpkg-deb"))
    truth = parse_rate(args.fast) / parse_rate(args.slow)
    work = Path(tempfile.mkdtemp(prefix="bench-lab-ab-", dir=args.work_dir))
    print(f"XFS on one {args.disk_size} lab disk at {args.slow} (reference) and {args.fast}: {args.operation}, "
          f"{args.size} file, iodepth {args.iodepth}, {args.runtime} x 3 per run; true ratio {truth:.2f}")
    factors, passed = [], 0
    try:
        for number in range(1, args.pairs + 1):
            pair = one_pair(args, number, work)
            wording, factor, allowed, ok = judge(pair, truth)
            factors.append(factor)
            passed += ok
            for side in pair:
                op = next(op for op in pair[side][1].operations if op.name.endswith(args.operation))
                shown = op.spread("effective_bw")
                assert shown is not None
                print(f"pair {number} {side}: {shown.describe(lambda v: f'{v / MiB:.1f}')} MiB/s "
                      f"(lab run {pair[side][0]:.0f} s)")
            inside = "one side has no interval" if allowed is None else (
                f"ratio range {allowed[0]:.3f}-{allowed[1]:.3f}, "
                f"{truth:.2f} {'inside' if allowed[0] <= truth <= allowed[1] else 'OUTSIDE'}")
            print(f"pair {number}: fast against slow: {wording}; {inside}; {'pass' if ok else 'FAIL'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} of {args.pairs} pairs: 'faster' beyond noise with the true ratio {truth:.2f} inside the interval")
    print(ratio_line(f"fast/slow {args.operation} MiB/s (true {truth:.2f})", factors,
                     f"{args.pairs} of {args.pairs} pairs pass", "ok" if passed == args.pairs else "UNDER GOAL",
                     what="pairs", digits=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
