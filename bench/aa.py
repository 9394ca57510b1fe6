"""A/A: the same target, pairs of `backupbench run --repeat 3`; how often the verdict says
"no difference beyond noise" (issue 25).

Usage: python bench/aa.py [--pairs 10] [--size 64MiB] [--runtime 2s] [--ramp SECONDS] [--dir DIR]
Two runs of one workload on one directory with the same settings differ only by noise: every
comparison between them should say "no difference beyond noise". Each pair is two runs, one
after the other; each run measures every operation 3 times (--repeat 3); each operation of the
second run is set against the first through analysis/noise.py's verdict (the one every
comparison uses). The reference is the same run measured in the same bench: a pair is its own
control. Prints one ratio line: per pair, the share of its comparisons that said "no difference
beyond noise" (goal: at least 0.9, i.e. 9 of 10); and a line with the count over all pairs.
Exits 0 when it measured, whether or not the goal was met.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import ratio_line

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from backupbench.analysis.noise import verdict  # noqa: E402  (this tree's, as the runs use)

OPERATIONS = "active-full,restore-sequential,restore-random"
GOAL = 0.9


def samples_by_operation(directory: Path, args: argparse.Namespace, results: Path) -> dict[str, list[float]]:
    """One `run --repeat 3`: each operation's effective_bw samples."""
    ramp = [] if args.ramp is None else ["--ramp", args.ramp]
    done = subprocess.run([sys.executable, "-m", "backupbench", "run", str(directory), "--operations", OPERATIONS,
                           "--size", args.size, "--runtime", args.runtime, *ramp, "--repeat", "3", "--quiet",
                           "--json", "--results", str(results)], capture_output=True, text=True, check=True)
    phases = json.loads(done.stdout)["phases"]
    return {phase["name"]: next(f["samples"] for f in phase["figures"] if f["name"] == "effective_bw")
            for phase in phases}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--size", default="64MiB")
    parser.add_argument("--runtime", default="2s")
    parser.add_argument("--ramp", default=None, help="each operation's ramp (default: the product's own)")
    parser.add_argument("--dir", type=Path, default=None, help="the target directory (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bb-aa-", dir=args.dir) as work:
        target, results = Path(work) / "target", Path(work) / "results"
        target.mkdir()
        shares, same, total = [], 0, 0
        for pair in range(args.pairs):
            first = samples_by_operation(target, args, results)
            second = samples_by_operation(target, args, results)
            calls = {op: verdict(second[op], first[op]) for op in first if op in second}
            for op, call in calls.items():
                print(f"pair {pair + 1} {op}: {call.text}")
            said_same = sum(call.outcome == "same" for call in calls.values())
            same, total = same + said_same, total + len(calls)
            shares.append(said_same / len(calls))
    print(f"{same} of {total} comparisons of identical runs said no difference beyond noise")
    print(ratio_line("A/A comparisons with no difference beyond noise / all", shares, f">= {GOAL}",
                     "ok" if same >= GOAL * total else "UNDER GOAL", what="pairs"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
