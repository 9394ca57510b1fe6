"""The block-clone workload's clone step against `cp --reflink=always` of the same file; prints the ratio.

Usage (root): python bench/blockclone.py [--fs xfs|btrfs] [--size 1GiB] [--increments 3] [--pairs 7]
Goal: clone throughput of the workload's step / cp's >= 0.9.

Makes a sparse backing file in a temporary folder, a loop device on it, the filesystem
(XFS with reflink=1, or btrfs) and mounts it; all of it is removed afterwards, also on
failure. The source is made the way the workload makes its synthetic fulls: a full of
random data, then --increments rounds of clone + 5 % changed blocks (512 KiB), so it has
the extents a synthetic full has. Then --pairs times each, in a shuffled order each round: the workload's
clone step (engines/clone.clone_file: open, create, FICLONERANGE, close; wall time) and
`cp --reflink=always` (wall time of the process). cp's time includes starting a process;
the same cp on an empty file is timed too, and the ratio is also given with that
subtracted. Before each clone the filesystem is synced; clones are removed at the end.
The times shown are medians; the ratios are taken within each round and printed as their
median with the min-max. Exits 0 when it measured, whether or not the goal was met.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from _common import ratio_line, require  # noqa: E402
from backupbench import units  # noqa: E402
from backupbench.engines import clone  # noqa: E402

BLOCK = 512 * units.KiB
GOAL = 0.9
MKFS = {"xfs": ["mkfs.xfs", "-q", "-f", "-m", "reflink=1"], "btrfs": ["mkfs.btrfs", "-q", "-f"]}


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


def write_random(path: Path, size: int) -> None:
    with open(path, "wb") as handle:
        for _ in range(size // (64 * units.MiB)):
            handle.write(os.urandom(64 * units.MiB))
        handle.write(os.urandom(size % (64 * units.MiB)))
        os.fsync(handle.fileno())


def synthetic_source(folder: Path, size: int, increments: int) -> Path:
    """A full, then `increments` synthetic fulls (clone + 5 % new blocks); returns the last."""
    previous = folder / "full.dat"
    write_random(previous, size)
    rng = random.Random(1)
    blocks = size // BLOCK
    for index in range(1, increments + 1):
        current = folder / f"synthetic-{index}.dat"
        clone.clone_file(previous, current)
        with open(current, "r+b") as handle:
            for block in rng.sample(range(blocks), max(1, blocks // 20)):
                handle.seek(block * BLOCK)
                handle.write(os.urandom(BLOCK))
            os.fsync(handle.fileno())
        previous = current
    return previous


def settle(path: Path) -> None:
    """Nothing of the trial before is left to write (syncfs), nor to clean up: clones are
    only removed at the end, as XFS frees an unlinked file's extents in the background."""
    clone.used_bytes(path.parent)
    time.sleep(0.05)


def time_ours(source: Path, dest: Path, per_call: int | None) -> float:
    settle(source)
    started = time.perf_counter()
    clone.clone_file(source, dest, per_call)
    return time.perf_counter() - started


def time_cp(source: Path, dest: Path) -> float:
    settle(source)
    started = time.perf_counter()
    subprocess.run(["cp", "--reflink=always", str(source), str(dest)], check=True)
    return time.perf_counter() - started


def measure(source: Path, pairs: int) -> dict[str, list[float]]:
    clones = source.parent / "clones"
    clones.mkdir()
    empty = source.parent / "empty.dat"
    empty.touch()
    ours, ours_block, cp, cp_empty = [], [], [], []
    order = random.Random(7)
    for trial in range(pairs):
        steps = [lambda trial=trial: cp_empty.append(time_cp(empty, clones / f"empty-{trial}")),
                 lambda trial=trial: ours.append(time_ours(source, clones / f"ours-{trial}", None)),
                 lambda trial=trial: cp.append(time_cp(source, clones / f"cp-{trial}")),
                 lambda trial=trial: ours_block.append(time_ours(source, clones / f"block-{trial}", BLOCK))]
        order.shuffle(steps)  # no method always follows the same one
        for step in steps:
            step()
    return {"ours": ours, "cp": cp, "ours_per_block": ours_block, "cp_empty": cp_empty}


def report(fs: str, size: int, extents: clone.ExtentSummary, times: dict[str, list[float]]) -> None:
    t = {key: statistics.median(values) for key, values in times.items()}
    rate = lambda seconds: units.format_rate(size / seconds)  # noqa: E731
    print(f"{fs}: source {units.format_size(size)}, {extents.extents} extents ({extents.records} FIEMAP records)")
    for label, key in (("workload clone step (one FICLONE)", "ours"), ("cp --reflink=always", "cp"),
                       ("workload, FICLONERANGE per 512 KiB", "ours_per_block")):
        print(f"  {label + ':':<38} {t[key] * 1000:8.2f} ms  {rate(t[key])}")
    print(f"  {'cp --reflink=always of an empty file:':<38} {t['cp_empty'] * 1000:8.2f} ms  (starting a process)")
    rounds = list(zip(times["cp"], times["ours"], times["cp_empty"]))
    ratios = [cp / ours for cp, ours, _ in rounds]
    verdict = "ok" if statistics.median(ratios) >= GOAL else "BELOW GOAL"
    print("  " + ratio_line(f"workload/cp throughput, {fs}", ratios, f">= {GOAL}", verdict, what="rounds", digits=2))
    print("  " + ratio_line(f"workload/cp throughput without cp's process start, {fs}",
                            [max(cp - empty, 1e-9) / ours for cp, ours, empty in rounds], what="rounds", digits=2))


def run(fs: str, size: int, increments: int, pairs: int, work: Path) -> None:
    backing = work / f"{fs}.img"
    with open(backing, "wb") as handle:
        handle.truncate(max(4 * units.GiB, size * 3))
    loop = sh("losetup", "--find", "--show", "--direct-io=on", str(backing))
    mount = work / "mnt"
    mount.mkdir()
    try:
        sh(*MKFS[fs], loop)
        sh("mount", loop, str(mount))
        try:
            source = synthetic_source(mount, size, increments)
            extents = clone.summarize(clone.file_extents(source))
            report(fs, size, extents, measure(source, pairs))
        finally:
            sh("umount", str(mount))
    finally:
        sh("losetup", "--detach", loop)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fs", choices=sorted(MKFS), action="append")
    parser.add_argument("--size", default="1GiB")
    parser.add_argument("--increments", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=7)
    args = parser.parse_args()
    chosen = args.fs or ["xfs", "btrfs"]
    require("blockclone", root=True, tools=("losetup", "mount", "cp", *(MKFS[fs][0] for fs in chosen)))
    for fs in chosen:
        with tempfile.TemporaryDirectory(prefix="bb-blockclone-") as work:
            run(fs, units.parse_size(args.size), args.increments, args.pairs, Path(work))
    return 0


if __name__ == "__main__":
    sys.exit(main())
