#!/usr/bin/env python3
"""Benchmark: the CPU a `backupbench` command costs before it does anything, against the
libraries it cannot start without.

Usage: python bench/cli_startup.py [--rounds 7]
Each round starts, in turn, the reference `python -c "import click, rich.console, pydantic"`
and `python -m backupbench --version`, `run --help`, `apply --help`, and takes each process's
user+system CPU time (not wall time: a busy machine stretches wall time, and the lab's TCG
guest multiplies CPU time by about 30). Prints per command the median CPU seconds and one
ratio line: the command's CPU / the reference's, per round. What a command imports beyond its
libraries is the ratio's excess over 1 (cli/lazy_group.py, pydantic's defer_build).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys

from _common import ROOT, ratio_line

REFERENCE = ("-c", "import click, rich.console, pydantic")
COMMANDS = {"--version": ("--version",), "run --help": ("run", "--help"), "apply --help": ("apply", "--help")}


# This tree's code, whichever venv runs the bench.
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT / "src"), os.environ.get("PYTHONPATH"))))}


def cpu_seconds(args: tuple[str, ...]) -> float:
    """User+system CPU of one Python process started with `args`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, *args], check=True, capture_output=True, env=ENV)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    cpu_seconds(("-m", "backupbench", "--version"))  # bytecode compiled once, not in round 1
    reference: list[float] = []
    measured: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.rounds):
        reference.append(cpu_seconds(REFERENCE))
        for name, argv in COMMANDS.items():
            measured[name].append(cpu_seconds(("-m", "backupbench", *argv)))
    print(f"reference (click, rich, pydantic imported): {statistics.median(reference):.3f} s CPU")
    for name, seconds in measured.items():
        print(f"backupbench {name}: {statistics.median(seconds):.3f} s CPU")
    for name, seconds in measured.items():
        print(ratio_line(f"CPU of backupbench {name} / its libraries'", [s / r for s, r in zip(seconds, reference)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
