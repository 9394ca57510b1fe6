#!/usr/bin/env python3
"""Benchmark: CPU cost of the monitor's Sampler with at least 64 block devices present.

Creates N loop devices (default 64) on small sparse files in a temp dir, samples every
block device at 1 Hz for ~20 s with the CSV on, and reports the CPU time the sampler used:
measured inside its thread (time.thread_time, reported as summary.sampler_cpu_s) and, as a
check, the whole process's CPU time over the run minus an idle reference measured in the
same process just before. The sampler thread's CPU is also read after every sample, so
each interval's share of one core is known: the figure is their median with the min-max.
Goal: < 1 % of one core at 1 Hz. Exits 0 when it measured, whether or not the goal was met.

    sudo PYTHONPATH=src python3 bench/monitor_overhead.py [--devices 64] [--seconds 20]

Everything it creates is removed on exit, Ctrl-C or SIGTERM: loop devices detached (and
the loop device nodes it added removed again), temp files deleted. Needs root and losetup.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

from _common import ratio_line, require, spread
from _loops import made_loops
from backupbench.monitor import Sampler

GOAL_PCT = 1.0


def measure(seconds: float, interval: float, csv_path: Path) -> dict:
    # Idle reference: this process doing nothing, same way of waiting.
    ref_seconds = min(5.0, seconds / 4)
    w0, c0 = time.monotonic(), time.process_time()
    time.sleep(ref_seconds)
    idle_pct = (time.process_time() - c0) / (time.monotonic() - w0) * 100

    # The sampler thread's own CPU clock after each of its samples (the callback runs in the
    # thread that sampled; stop()'s last sample runs in this one and is left out).
    thread_cpu: list[float] = []
    main_thread = threading.get_ident()

    def on_sample(_sample) -> None:
        if threading.get_ident() != main_thread:
            thread_cpu.append(time.thread_time())

    w0, c0 = time.monotonic(), time.process_time()
    with Sampler(interval=interval, devices=None, csv_path=csv_path, on_sample=on_sample) as sampler:
        time.sleep(seconds)
    wall = time.monotonic() - w0
    process_pct = (time.process_time() - c0) / wall * 100
    summary = sampler.summary
    return {
        "devices": len(sampler.devices), "samples": summary.samples, "wall": wall,
        "thread_cpu": summary.sampler_cpu_s, "process_pct": process_pct, "idle_pct": idle_pct,
        "errors": summary.errors, "csv_columns": len(csv_path.read_text().splitlines()[0].split(",")),
        "interval_pcts": [(b - a) / interval * 100 for a, b in zip(thread_cpu, thread_cpu[1:])],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=64, help="loop devices to create (default 64)")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long to sample (default 20)")
    parser.add_argument("--interval", type=float, default=1.0, help="sampling interval in s (default 1)")
    args = parser.parse_args()
    require("monitor_overhead", root=True, tools=("losetup",))

    try:
        with made_loops(args.devices, "bb-monitor-bench-") as (created, folder):
            present = len([n for n in os.listdir("/sys/block")])
            print(f"{present} block devices present; sampling all of them every {args.interval:g} s "
                  f"for {args.seconds:g} s ...", flush=True)
            r = measure(args.seconds, args.interval, folder / "monitor.csv")
    except KeyboardInterrupt:
        print("interrupted; cleaned up", file=sys.stderr)
        return 130

    thread_pct = r["thread_cpu"] / r["wall"] * 100
    per_sample_ms = r["thread_cpu"] / max(r["samples"], 1) * 1000
    print(f"sampled devices:          {r['devices']} ({r['csv_columns']} CSV columns), {r['samples']} samples "
          f"in {r['wall']:.1f} s")
    print(f"sampler thread CPU:       {r['thread_cpu'] * 1000:.1f} ms = {per_sample_ms:.2f} ms per sample")
    print(f"CPU, % of one core:       {thread_pct:.3f} %  (goal < {GOAL_PCT:g} %: {thread_pct / GOAL_PCT:.3f} x goal)")
    print(f"check, whole process:     {r['process_pct']:.3f} % while sampling, {r['idle_pct']:.3f} % idle "
          f"-> {r['process_pct'] - r['idle_pct']:.3f} % for the sampler")
    if r["errors"]:
        print(f"sampling errors: {r['errors']}")
    per_interval = r["interval_pcts"] or [thread_pct]   # a run too short for two samples: the whole run
    verdict = "ok" if spread(per_interval).median < GOAL_PCT else "ABOVE GOAL"
    print(ratio_line(f"sampler CPU / wall time per interval, % of one core, {r['devices']} devices at "
                     f"{1 / args.interval:g} Hz", per_interval, f"< {GOAL_PCT:g}", verdict, what="intervals"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
