"""The aging workload against the raw I/O it issues, and its space against the repository plan's
closed form; prints the ratios.

Usage (root): python bench/aging.py [--full-size 1GiB] [--days 28] [--pairs 3]
                                    [--space-full-size 256MiB] [--space-days 35]
Goals: the same bytes by fio and cp --reflink alone / the aging run's days: wall time >= 0.8;
measured / closed-form space for 3 policies with and without block clone: <= 1 for each (the
closed form is the most the policy holds; issue 40 made it so for GFS without block clone and
for a full rewritten in place), or over by no more than the run's own draw: its days' changes are
drawn (25 or 26 blocks a day for 25.6, each of a drawn size), and a run whose draw held more than
its mean says by how much.

Overhead, on XFS with reflink on a loop device (direct I/O, a sparse backing file), made anew
for each side of each pair, the order alternating:
- aging: the workload's days (workloads/aging_run.AgingRun with no day measured: no restores,
  which are fio's own jobs, no space readings), forward-synthetic with block clone, 7 dailies,
  5% changed a day: wall time of the whole run of days, its random buffer, calendar, changed
  blocks, writes, clones, fsyncs, deletes and log included;
- reference: the bytes its log says it wrote, by one fio process (a file a day, written in
  order, blocks of the workload's sizes (bssplit), O_DIRECT, psync, each file fsynced when
  closed: as the workload writes; two jobs, the fulls and the increments, as a fio job's start
  costs ~0.3 s), then
  `cp --reflink=always` of a full for each synthetic full it cloned, then as many files
  unlinked as it deleted. Each group's days are written at their mean size, in whole 512 KiB
  blocks (the same bytes within 0.5 MiB a day).
Space: `backupbench run --workload aging --measure-every 1` for each policy, with and without
block clone, on a fresh XFS with reflink: the largest `space_vs_plan` over its days (the day's
peak over the closed form at the run's scale) and the last day's, and the changes its days drew
against their mean (aging.jsonl's new bytes against the changed blocks a day at the blocks' mean
stored size).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from _common import ratio_line, require  # noqa: E402
from backupbench import units  # noqa: E402
from backupbench.engines.backup_files import align_up  # noqa: E402
from backupbench.engines.fio import FioEngine  # noqa: E402
from backupbench.workloads.aging import AgingOptions  # noqa: E402
from backupbench.workloads.aging_run import LOG, AgingRun  # noqa: E402

GOAL = 0.8
BLOCK = 512 * units.KiB
POLICIES = {
    "forward-synthetic, 7 dailies": {"method": "forward-synthetic", "dailies": 7},
    "forward-synthetic, 7 dailies + 4 weeklies": {"method": "forward-synthetic", "dailies": 7, "weeklies": 4},
    "forever-forward, 7 dailies": {"method": "forever-forward", "dailies": 7},
}


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


@contextmanager
def xfs(work: Path, size: int) -> Iterator[Path]:
    """A fresh XFS with reflink on a loop device over a sparse file; all of it gone afterwards."""
    backing = work / "xfs.img"
    with open(backing, "wb") as handle:
        handle.truncate(size)
    loop = sh("losetup", "--find", "--show", "--direct-io=on", str(backing))
    mount = work / "mnt"
    mount.mkdir()
    try:
        sh("mkfs.xfs", "-q", "-f", "-m", "reflink=1", loop)
        sh("mount", loop, str(mount))
        try:
            yield mount
        finally:
            sh("umount", str(mount))
    finally:
        sh("losetup", "--detach", loop)
        mount.rmdir()
        backing.unlink()


class Quiet:
    """PhaseHooks that record nothing: the days are played, not measured."""

    def started(self, *args, **kwargs) -> None: ...
    def progress(self, *args) -> None: ...
    def finished(self, *args, **kwargs) -> None: ...
    def will_create(self, artefact) -> None: ...
    def removed(self, *args) -> None: ...


def aging_side(options: AgingOptions, mount: Path, out: Path) -> tuple[float, list[dict]]:
    files = mount / "repo"
    files.mkdir()
    started = time.perf_counter()
    AgingRun(options, FioEngine(), mount, files, out, Quiet(), measured=set()).play()
    seconds = time.perf_counter() - started
    return seconds, [json.loads(line) for line in (out / LOG).open()]


def sizes_of(options: AgingOptions) -> str:
    """fio's bssplit for the workload's stored blocks: the quartiles' middles of its even draw
    around the mean, aligned as it aligns them, a quarter each."""
    shape = options.shape
    sizes = [align_up(round(shape.mean * (1 + shape.spread * (2 * q - 1))), shape.align) for q in (0.125, 0.375,
                                                                                                0.625, 0.875)]
    return ":".join(f"{size}/25" for size in sizes)


def fio_jobs(log: list[dict], mount: Path, options: AgingOptions) -> str:
    """The days' writes as two fio jobs (a job's start costs fio ~0.3 s, a job a day would time
    that, not the I/O): the fulls, and the increments, each day a file of its own written in
    order with blocks of the workload's sizes, each file fsynced as it is closed (as the
    workload does): the same bytes within 512 KiB a day."""
    full = max(day["written"] for day in log)
    groups = {"fulls": [d["written"] for d in log if d["written"] >= full // 2],
              "increments": [d["written"] for d in log if 0 < d["written"] < full // 2]}
    lines = ["[global]", "ioengine=psync", "direct=1", f"bssplit={sizes_of(options)}", "rw=write", "fallocate=none",
             "fsync_on_close=1", "thread=1", f"directory={mount}", "file_service_type=sequential",
             "filename_format=$jobname.$filenum"]
    for name, sizes in groups.items():
        each = sum(sizes) // len(sizes) // BLOCK * BLOCK if sizes else 0
        if each:
            lines += [f"[{name}]", f"nrfiles={len(sizes)}", f"filesize={each}", f"size={each * len(sizes)}",
                      "stonewall"]
    return "\n".join(lines) + "\n"


def reference_side(log: list[dict], mount: Path, out: Path, options: AgingOptions) -> float:
    job_file = out / "reference.fio"
    job_file.write_text(fio_jobs(log, mount, options))
    clones = [day["day"] for day in log if day["clone_calls"]]
    deletes = sum(len(day["deleted"]) for day in log)
    started = time.perf_counter()
    subprocess.run(["fio", "--output-format=json", f"--output={out / 'reference.json'}", str(job_file)], check=True,
                   capture_output=True)
    first = min(mount.glob("fulls.*"))
    for day in clones:
        subprocess.run(["cp", "--reflink=always", str(first), f"{mount}/clone-{day:04d}"], check=True)
    for path in sorted(mount.iterdir())[:deletes]:
        path.unlink()
    return time.perf_counter() - started


def overhead(args: argparse.Namespace, work: Path) -> None:
    options = AgingOptions(full_size=args.full_size, days=args.days, block_clone=True, dailies=7)
    size = max(4 * units.GiB, 4 * options.full_size)
    ratios, ours, theirs = [], [], []
    log: list[dict] = []
    for pair in range(args.pairs):
        out = work / f"pair-{pair}"
        out.mkdir()
        times = {}
        # The first pair plays the aging run first: the reference replays its log (the same seed
        # makes the same bytes every time).
        for side in (("aging", "reference") if pair % 2 == 0 else ("reference", "aging")):
            with xfs(work, size) as mount:
                if side == "aging":
                    times[side], log = aging_side(options, mount, out)
                else:
                    times[side] = reference_side(log, mount, out, options)
        ours.append(times["aging"])
        theirs.append(times["reference"])
        ratios.append(times["reference"] / times["aging"])
    written = sum(day["written"] for day in log)
    cloned = sum(day["cloned"] for day in log)
    print(f"overhead: {units.format_size(options.full_size)} full, {options.days} days, forward-synthetic with block "
          f"clone, 7 dailies: {units.format_size(written)} written, {units.format_size(cloned)} cloned in "
          f"{sum(day['clone_calls'] for day in log):,} calls, {sum(len(d['deleted']) for d in log)} files deleted")
    print(f"  aging run's days: {statistics.median(ours):.2f} s; fio + cp --reflink alone: "
          f"{statistics.median(theirs):.2f} s (medians)")
    verdict = "ok" if statistics.median(ratios) >= GOAL else "BELOW GOAL"
    print("  " + ratio_line("fio + cp --reflink time / aging run time", ratios, f">= {GOAL}", verdict, what="pairs",
                            digits=2))


def drawn(results: Path, run_id: str, options: AgingOptions) -> float:
    """The run's changed bytes over their mean: every day's new blocks as drawn against the
    changed blocks a day at the blocks' mean stored size (what the closed form is given)."""
    log = [json.loads(line) for line in (results / "runs" / run_id / LOG).open()]
    days = [day["new_bytes"] for day in log if day["day"]]
    return sum(days) / (len(days) * options.per_day * options.shape.mean_length())


def verdict(most: float, draw: float) -> str:
    if most <= 1:
        return "ok"
    if most <= draw:
        return f"over by the draw: its days' changes drew {draw - 1:.1%} over their mean"
    return "OVER"


def space(args: argparse.Namespace, work: Path) -> None:
    print(f"space: {args.space_full_size} full, {args.space_days} days, measured every day (peak over the closed form)")
    for label, policy in POLICIES.items():
        for clone in (True, False):
            with xfs(work, 4 * units.GiB) as mount:
                results = work / "results"
                argv = [sys.executable, "-m", "backupbench", "run", str(mount), "--workload", "aging", "--full-size",
                        args.space_full_size, "--days", str(args.space_days), "--measure-every", "1",
                        "--operations", "restore-random", "--runtime", "0.2s", "--ramp", "0", "--no-monitor",
                        "--results", str(results), "--json", *(["--block-clone"] if clone else []),
                        *[arg for key, value in policy.items() for arg in (f"--{key}", str(value))]]
                done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(
                    Path(__file__).resolve().parents[1] / "src")})
                if done.returncode != 0:
                    sys.exit(f"backupbench run failed ({done.returncode}): {done.stderr[-2000:]}")
                stored = json.loads(done.stdout)
                ratios = [figure["value"] for op in stored["phases"] if op["name"].endswith(":job")
                          for figure in op["figures"] if figure["name"] == "space_vs_plan"]
                options = AgingOptions(full_size=args.space_full_size, days=args.space_days, block_clone=clone,
                                       **policy)
                draw = drawn(results, stored["run"]["id"], options)
            print("  " + ratio_line(f"measured/closed-form space, {label}, {'block clone' if clone else 'copies'}",
                                    [max(ratios)], "<= 1", verdict(max(ratios), draw), digits=3)
                  + f"; last day {ratios[-1]:.3f}; changes drawn {draw:.3f}x their mean")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full-size", default="1GiB")
    parser.add_argument("--days", type=int, default=28)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--space-full-size", default="256MiB")
    parser.add_argument("--space-days", type=int, default=35)
    args = parser.parse_args()
    require("aging", root=True, tools=("losetup", "mount", "mkfs.xfs", "cp", "fio", "xfs_spaceman"))
    with tempfile.TemporaryDirectory(prefix="bb-aging-") as work:
        overhead(args, Path(work))
    with tempfile.TemporaryDirectory(prefix="bb-aging-") as work:
        space(args, Path(work))
    return 0


if __name__ == "__main__":
    sys.exit(main())
