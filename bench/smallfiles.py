"""The small-file engine against the same work in plain C, alternating; prints the ratio.

Usage: python bench/smallfiles.py [--pairs 7] [--files 20000] [--file-size 100KiB]
                                  [--folders 200] [--threads N] [--disk-dir .]
Goal: engine/C files/s >= 0.9 for "create" and "update-1", on tmpfs and on the disk.

The reference is bench/smallfiles_loop.c, compiled here with gcc -O2 into a temporary
folder: the same files, folders, names, threads (pthreads, one contiguous chunk each),
creating with 0x00 then rewriting in place with 0xff, each file's open+write+close timed.
The engine runs with data "pattern", patterns 0x00,0xff and flush "none" (the C loop
does not sync either), so both sides measure the same system calls. Runs alternate (C first in odd pairs,
the engine first in even ones) because absolute figures drift; the filesystem is synced
before each run so one run's write-back does not land in the next. Both sides run at
niceness -10 (--nice) and the bench prints how much CPU other processes took meanwhile,
and each side's CPU time per file, which other load disturbs far less than files/s. Everything is created
in two temporary folders (one in /dev/shm, one in --disk-dir) that are removed at the end,
also on Ctrl-C. Prints one ratio line per target and phase: the median of the pairs' ratios
with their min-max. Exits 0 when it measured, whether or not the goal was met.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ratio_line, require, spread
from backupbench import units
from backupbench.engines.smallfiles import SmallFilesEngine
from backupbench.engines.smallfiles_job import SmallFilesJob
from backupbench.errors import Interrupted
from backupbench.workloads.smallfiles import SmallFilesSpec

HERE = Path(__file__).resolve().parent
CPUS = os.cpu_count() or 1
PHASES = ("create", "update-1")
GOAL = 0.9


def compile_loop(out_dir: Path) -> Path:
    binary = out_dir / "smallfiles_loop"
    subprocess.run(["gcc", "-O2", "-pthread", "-o", str(binary), str(HERE / "smallfiles_loop.c")],
                   check=True)
    return binary


def through_c(binary: Path, work: Path, spec: SmallFilesJob, run: int) -> dict[str, float]:
    root = work / f"c-{run}"
    root.mkdir()
    try:
        child = subprocess.Popen([str(binary), str(root), str(spec.files), str(spec.file_size),
                                  str(spec.folders), str(spec.threads)], stdout=subprocess.PIPE, text=True)
        try:
            out, _ = child.communicate()
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        if child.returncode != 0:
            raise RuntimeError(f"the C loop failed (exit {child.returncode})")
        rates = {}
        for line in out.splitlines():
            phase, seconds, files = line.split()
            rates[phase] = int(files) / float(seconds)
        return rates
    finally:
        shutil.rmtree(root, ignore_errors=True)


def through_engine(work: Path, spec: SmallFilesJob, run: int) -> dict[str, float]:
    results = SmallFilesEngine().run(spec, work, f"bench-{run}", lambda *_: None)
    return {r.name: r.files_per_s for r in results}


def cpu_seconds() -> float:
    """User + system CPU of this process and its reaped children (the C loop, the engine's workers)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def busy_cpu_seconds() -> float:
    """CPU time spent by everything on the machine (all CPUs, not idle or iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def settle() -> None:
    os.sync()
    time.sleep(0.5)


def measure_pair(binary: Path, work: Path, job: SmallFilesJob, pair: int, run: int) -> dict:
    """One C run and one engine run, in an order alternating between pairs so drift favours neither."""
    order = ("c", "engine") if pair % 2 else ("engine", "c")
    got: dict[str, dict[str, float]] = {}
    cpu: dict[str, float] = {}
    others = []
    for offset, side in enumerate(order):
        settle()
        before, busy_before, started = cpu_seconds(), busy_cpu_seconds(), time.monotonic()
        got[side] = (through_c(binary, work, job, run + offset) if side == "c"
                     else through_engine(work, job, run + offset))
        ours = cpu_seconds() - before
        # CPU per file over the whole run (both phases, folders, and for the engine also
        # building the file list): less sensitive to other load than files/s.
        cpu[side] = ours / (len(PHASES) * job.files) * 1e6
        # CPU that other processes took meanwhile, as a share of the machine.
        elapsed = time.monotonic() - started
        others.append(max(0.0, busy_cpu_seconds() - busy_before - ours) / (elapsed * CPUS))
    return {"rates": got, "cpu": cpu, "others": others}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--file-size", default="100KiB")
    parser.add_argument("--folders", type=int, default=200)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--disk-dir", type=Path, default=Path.cwd(),
                        help="where the on-disk runs go (a temporary folder is made in it)")
    parser.add_argument("--nice", type=int, default=-10,
                        help="niceness for both sides (root may go below 0) so that other load "
                        "on the machine disturbs the comparison less; 0 to leave it")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    require("smallfiles", tools=("gcc",))
    if args.nice:
        try:
            os.nice(args.nice)
        except PermissionError:
            print("cannot change niceness (not root); running at the current one", file=sys.stderr)
    # data = "pattern": each pass writes its byte of `patterns`, as the C loop does (the
    # workload's default data is fresh random bytes, which the C loop does not make).
    job = SmallFilesSpec(files=args.files, file_size=args.file_size, folders=args.folders, threads=args.threads,
                         patterns="0x00,0xff", data="pattern", flush="none", verify=False).job()

    created: list[Path] = []
    try:
        build = Path(tempfile.mkdtemp(prefix="bb-bench-smallfiles-"))
        created.append(build)
        binary = compile_loop(build)
        targets = {}
        for label, parent in (("tmpfs", Path("/dev/shm")), ("disk", args.disk_dir)):
            work = Path(tempfile.mkdtemp(prefix="bb-bench-smallfiles-", dir=parent))
            created.append(work)
            targets[label] = work

        print(f"{job.files:,} files x {units.format_size(job.file_size)} in {job.folders:,} folders, "
              f"{job.threads} threads; {args.pairs} pairs per target; files/s")
        print(f"{'':<22}{'files/s':>22}{'':>8}{'CPU us/file':>20}")
        print(f"{'target':<7}{'pair':>5}{'phase':>10}{'C':>11}{'engine':>11}{'ratio':>8}{'C':>10}{'engine':>10}")
        ratios: dict[tuple[str, str], list[float]] = {}
        cpu_ratios: dict[str, list[float]] = {}
        other_load: dict[str, list[float]] = {label: [] for label in targets}
        run = 0
        for label, work in targets.items():
            for pair in range(1, args.pairs + 1):
                got = measure_pair(binary, work, job, pair, run)
                run += 2
                other_load[label] += got["others"]
                cpu = got["cpu"]
                for phase in PHASES:
                    c, eng = got["rates"]["c"][phase], got["rates"]["engine"][phase]
                    ratios.setdefault((label, phase), []).append(eng / c)
                    cpu_text = f"{cpu['c']:>10.1f}{cpu['engine']:>10.1f}" if phase == PHASES[0] else ""
                    print(f"{label:<7}{pair:>5}{phase:>10}{c:>11,.0f}{eng:>11,.0f}{eng / c:>8.3f}{cpu_text}")
                cpu_ratios.setdefault(label, []).append(cpu["c"] / cpu["engine"])
        print()
        summarize(ratios, cpu_ratios, other_load)
        return 0
    except (KeyboardInterrupt, Interrupted):
        print("interrupted; removing what the bench created", file=sys.stderr)
        return 130
    finally:
        for path in created:
            shutil.rmtree(path, ignore_errors=True)


def summarize(ratios: dict[tuple[str, str], list[float]], cpu_ratios: dict[str, list[float]],
              other_load: dict[str, list[float]]) -> None:
    for (label, phase), values in ratios.items():
        verdict = "ok" if spread(values).median >= GOAL else "BELOW GOAL"
        print(ratio_line(f"engine/C files/s, {label} {phase}", values, f">= {GOAL}", verdict, what="pairs"))
    for label, values in cpu_ratios.items():
        load = spread(other_load[label])
        print(f"{label:<6} CPU per file, C/engine = {spread(values, 'pairs').text()} (1.0 = the engine costs no more CPU "
              f"than C); other processes took {load.median:.0%} of the CPUs (median, max {load.high:.0%})")


if __name__ == "__main__":
    sys.exit(main())
