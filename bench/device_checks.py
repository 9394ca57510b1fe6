#!/usr/bin/env python3
"""Benchmark: the plan's device checks and the re-check before a write, for N empty loop
devices, as `apply` makes them (devices/checks.py: one lsblk, pvs and wipefs for all the
devices) against the reference measured in the same run, the way they were made before:
device by device, each with its own lsblk, pvs and wipefs (devices/block.py's `eligible`
and `recheck_before_write` for one device). Both sides run in turn, the one going first
alternating; each prints its tool runs and wall time, and the ratio is new / reference.

On this host a tool run costs milliseconds; in the lab's emulated guest about half a
second, where the difference counts (README, "Tests and benchmarks").

    sudo PYTHONPATH=src python3 bench/device_checks.py [--devices 6] [--pairs 5]

Everything it creates (loop devices on sparse files in a temp dir) is removed on exit,
Ctrl-C or SIGTERM. Needs root and losetup.
"""

from __future__ import annotations

import argparse
import sys
import time

from _common import ratio_line, require, spread
from _loops import made_loops

from backupbench import process
from backupbench.devices.block import eligible, recheck_before_write
from backupbench.devices.checks import DeviceChecks


class CountingRunner:
    def __init__(self) -> None:
        self.runs = 0

    def __call__(self, argv, **kwargs) -> process.Result:
        self.runs += 1
        return process.run(argv, **kwargs)


def one_look_for_all(devices: tuple[str, ...], run: CountingRunner) -> None:
    checks = DeviceChecks(devices, run=run)
    assert all(checks.reasons(device) == [] for device in devices), "a bench device is not empty"
    checks.recheck(devices)


def device_by_device(devices: tuple[str, ...], run: CountingRunner) -> None:
    planned = {}
    for device in devices:
        planned[device], reasons = eligible(device, run=run)
        assert reasons == [], f"{device} is not empty: {reasons}"
    for device in devices:
        recheck_before_write(device, expected=planned[device], run=run)


def measure(devices: tuple[str, ...], pairs: int) -> dict[str, list[tuple[int, float]]]:
    sides = {"one look": one_look_for_all, "device by device": device_by_device}
    got: dict[str, list[tuple[int, float]]] = {name: [] for name in sides}
    for pair in range(pairs):
        order = list(sides) if pair % 2 else list(reversed(sides))
        for name in order:
            run = CountingRunner()
            started = time.perf_counter()
            sides[name](devices, run)
            got[name].append((run.runs, time.perf_counter() - started))
    return got


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=6, help="loop devices to check (default 6)")
    parser.add_argument("--pairs", type=int, default=5, help="pairs of measurements (default 5)")
    args = parser.parse_args()
    require("device_checks", root=True, tools=("losetup", "lsblk", "wipefs"))

    try:
        with made_loops(args.devices, "bb-device-checks-bench-") as (created, _folder):
            got = measure(tuple(created), args.pairs)
    except KeyboardInterrupt:
        print("interrupted; cleaned up", file=sys.stderr)
        return 130

    for name, figures in got.items():
        print(f"{name:17} tool runs {spread((r for r, _ in figures), 'pairs').text(0)}, "
              f"wall {spread((s * 1000 for _, s in figures), 'pairs').text(1, ' ms')}")
    new, old = got["one look"], got["device by device"]
    print(ratio_line("tool runs, one look / device by device", (n[0] / o[0] for n, o in zip(new, old)),
                     what="pairs"))
    print(ratio_line("wall time, one look / device by device", (n[1] / o[1] for n, o in zip(new, old)),
                     what="pairs"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
