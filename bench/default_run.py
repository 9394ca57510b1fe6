"""The main job's default against the default it replaced (issue 42's benchmark): `backupbench
run` as `make run` runs it (every operation measured 3 times for 3 s after its ramp: an interval
on every figure) against the old default (once for 10 s after its ramp), in alternating pairs;
the new default's wall time over the old's. Goal: at most 1.5.

    python bench/default_run.py [--pairs 3] [--size 1GiB] [--dir DIR]

The A/A rate of the new default is bench/aa.py's (run it with --runtime 3s, as the default is).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, ratio_line, require, spread

GOAL = 1.5


def _run(target: Path, results: Path, size: str, *extra: str) -> tuple[float, int]:
    """(wall seconds, how many figures of the run carry an interval)."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "backupbench", "run", str(target), "--size", size, "--backup-size",
                           "10TiB", "--json", "--quiet", "--results", str(results), *extra],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    wall = time.monotonic() - started
    data = json.loads(done.stdout)
    with_interval = sum(1 for phase in data["phases"] for figure in phase["figures"]
                        if figure["name"] == "effective_bw" and "interval" in figure)
    return wall, with_interval


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--size", default="1GiB")
    parser.add_argument("--dir", type=Path, default=Path.cwd())
    parser.add_argument("--smoke", action="store_true",
                        help="the same two runs in miniature (1 s samples, no ramp): that the bench works, not a figure")
    args = parser.parse_args()
    require("default_run", tools=("fio",))
    work = Path(tempfile.mkdtemp(prefix="bb-bench-default-", dir=args.dir))
    target, results = work / "target", work / "results"
    target.mkdir()
    ratios = []
    try:
        print(f"{'pair':>4}{'new default s':>15}{'old default s':>15}{'ratio':>8}{'figures with an interval':>26}")
        for pair in range(1, args.pairs + 1):
            # The product's own defaults; in miniature, the new one spelled out (3 samples) at 1 s.
            sides = [("new", ("--repeat", "3", "--runtime", "1s", "--ramp", "0") if args.smoke else ()),
                     ("old", ("--runtime", "1s" if args.smoke else "10s", "--repeat", "1",
                              *(("--ramp", "0") if args.smoke else ())))]
            measured = {name: _run(target, results, args.size, *extra)
                        for name, extra in (sides if pair % 2 else sides[::-1])}
            (new, intervals), (old, _) = measured["new"], measured["old"]
            ratios.append(new / old)
            print(f"{pair:>4}{new:>15.1f}{old:>15.1f}{new / old:>8.2f}{intervals:>26}")
        verdict = "ok" if spread(ratios).median <= GOAL else "OVER GOAL"
        print(ratio_line("default run wall time / the old default's", ratios, f"<= {GOAL}", verdict, what="pairs",
                         digits=2))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
