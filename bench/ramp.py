#!/usr/bin/env python3
"""Benchmark: the spread (CV) of each KB2014 operation over repeated runs, without and with the ramp.

Runs `backupbench run --workload kb2014` --runs times with --ramp 0 (the reference) and
--runs times with the default ramp (kb2014.DEFAULT_RAMP_S), alternating, and the order within
each pair swapped every round so that a drift of the machine hits both sides alike. Each run
lays its own test file out in a scratch folder (removed at the end) and stores into a
temporary results folder. Prints, per operation, each side's median effective MiB/s and
coefficient of variation (stats.spread), the noise-aware verdict between the two sides
(analysis/noise.py) and each side's share of the bytes the disks saw (the cache guard's
storage_bytes_pct), so a cached figure would show; then one ratio line per operation: the CV
with the ramp / without, over all runs, with the range of that ratio when each round in turn
is left out (how much one round moves it; needs 3 rounds or more).

    flock /tmp/bb-heavy.lock .venv/bin/python bench/ramp.py [--runs 5] [--size 1GiB] [--runtime 10s] [--dir DIR]
        [--operations active-full,...]

Goal: the ramp's CV no larger than without it for every operation (ratio <= 1), or an
honest statement that on this machine it makes no difference beyond noise.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from _common import require  # noqa: E402
from backupbench.analysis.noise import verdict  # noqa: E402
from backupbench.stats import spread  # noqa: E402
from backupbench.workloads.kb2014 import DEFAULT_RAMP_S, OPERATION_NAMES  # noqa: E402

MIB = 2**20


def one_run(directory: Path, results: Path, ramp: float, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """{operation: {figure: value}} of one `backupbench run`."""
    done = subprocess.run([sys.executable, "-m", "backupbench", "run", str(directory), "--size", args.size,
                           "--runtime", args.runtime, "--ramp", f"{ramp:g}s", "--operations", ",".join(args.operations),
                           "--json", "--results", str(results)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"backupbench run failed ({done.returncode}): {done.stderr.strip()}")
    data = json.loads(done.stdout)
    return {phase["name"]: {f["name"]: f["value"] for f in phase["figures"]} for phase in data["phases"]}


def measure(args: argparse.Namespace, scratch: Path) -> dict[float, list[dict[str, dict[str, float]]]]:
    sides: dict[float, list[dict[str, dict[str, float]]]] = {0.0: [], DEFAULT_RAMP_S: []}
    for round_number in range(args.runs):
        order = (0.0, DEFAULT_RAMP_S) if round_number % 2 == 0 else (DEFAULT_RAMP_S, 0.0)
        for ramp in order:
            figures = one_run(scratch / "target", scratch / "results", ramp, args)
            sides[ramp].append(figures)
            shown = "  ".join(f"{op} {figures[op]['effective_bw'] / MIB:,.1f}" for op in args.operations)
            print(f"round {round_number + 1} ramp {ramp:g} s: {shown}", flush=True)
    return sides


def _bandwidths(runs: list[dict[str, dict[str, float]]], op: str) -> list[float]:
    return [run[op]["effective_bw"] / MIB for run in runs]


def cv_ratio(ramped: list[float], plain: list[float]) -> float:
    cv = spread(plain).cv
    return spread(ramped).cv / cv if cv else float("nan")


def ratio_line(op: str, ramped: list[float], plain: list[float]) -> str:
    """'ratio CV with ramp / without, OP: 0.470 (0.300-0.610 leaving each round out, 5 rounds); goal <= 1 ok'."""
    ratio = cv_ratio(ramped, plain)
    rounds = len(plain)
    if rounds >= 3:
        left = [cv_ratio(ramped[:i] + ramped[i + 1:], plain[:i] + plain[i + 1:]) for i in range(rounds)]
        shown = f"{min(left):.3f}-{max(left):.3f} leaving each round out, {rounds} rounds"
    else:
        shown = f"{rounds} rounds, too few to leave one out"
    return (f"ratio CV with ramp / without, {op}: {ratio:.3f} ({shown}); goal <= 1 "
            f"{'ok' if ratio <= 1 else 'OVER'}")


def report(sides: dict[float, list[dict[str, dict[str, float]]]], operations: list[str]) -> None:
    print(f"\n{'operation':<22}{'no ramp: median':>16}{'CV':>8}{f'ramp {DEFAULT_RAMP_S:g} s: median':>21}{'CV':>8}"
          f"  disks saw (no ramp / ramp)  verdict, ramp against none")
    for op in operations:
        plain, ramped = spread(_bandwidths(sides[0.0], op)), spread(_bandwidths(sides[DEFAULT_RAMP_S], op))
        seen = [min(run[op].get("storage_bytes_pct", float("nan")) for run in sides[s]) for s in (0.0, DEFAULT_RAMP_S)]
        print(f"{op:<22}{plain.median:>16,.1f}{plain.cv:>8.1%}{ramped.median:>21,.1f}{ramped.cv:>8.1%}"
              f"  >= {seen[0]:,.0f}% / >= {seen[1]:,.0f}%{'':>8}{verdict(ramped, plain).text}")
    print()
    for op in operations:
        print(ratio_line(op, _bandwidths(sides[DEFAULT_RAMP_S], op), _bandwidths(sides[0.0], op)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs on each side")
    parser.add_argument("--size", default="1GiB")
    parser.add_argument("--runtime", default="10s")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--operations", default=",".join(OPERATION_NAMES),
                        help="comma-separated KB2014 operations (default: all five)")
    args = parser.parse_args()
    args.operations = args.operations.split(",")
    if unknown := set(args.operations) - set(OPERATION_NAMES):
        parser.error(f"no such operation: {', '.join(sorted(unknown))} (known: {', '.join(OPERATION_NAMES)})")
    require("ramp", tools=("fio",))
    if args.runs < 2:
        parser.error("--runs must be at least 2: a CV needs two runs a side")
    scratch = Path(tempfile.mkdtemp(prefix="backupbench-bench-ramp-", dir=args.dir))
    try:
        (scratch / "target").mkdir()
        report(measure(args, scratch), args.operations)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
