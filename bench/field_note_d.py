"""Field note D in the lab, end to end: MinIO erasure coding vs MinIO on md RAID6, ZFS RAIDZ2
and ZFS dRAID2 over the same six throttled disks, and each layout set against what its member
disks could give.

Usage: python bench/field_note_d.py [--rate 1MiB/s] [--objects 100] [--concurrency 16] [--rounds 3]

About 35 minutes with the default 3 rounds on a 2-core machine (the lab run 30, the
reference fio 5, a VM with no KVM); one round took about 14. The disks are slow on purpose: at 4 MiB/s the guest's emulated CPUs, busy with MinIO's hashing and erasure coding,
already set much of the PUT figure.

1. Reference, measured in this run: one member disk's sequential write and read (fio, 1 MiB
   direct I/O on the raw virtual disk) in a lab VM with the same throttle, --rounds times.
2. `backupbench lab examples/field-note-d-s3-layouts.toml` (objects and streams as given, the
   s3 workload --rounds times on each layout, one after another), timed from the command's
   start to its end (image check, boot, every layout built, PUT, GET, torn down, VM gone).
3. For each layout: PUT and GET MiB/s next to the member disks' ceiling = the measured disk
   speed x the layout's data disks (usable capacity / disk size, from `backupbench size`'s
   model: 4 of 6 for EC:2, RAID6 and RAIDZ2; 3 for draid2:3d:6c:1s). The ratio is the share of
   that ceiling the layout reached; the guest's CPU and the member disks' reads during GET say
   whether the disks or something else set the figure (GETs served from memory read nothing).
   The table shows the median round; the ratio lines give each layout's rounds as their median
   with the min-max.
The winner of each phase (median rounds) and its margin over the runner-up close the output.
Exits 0 when it measured.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ratio_line, require, spread
from backupbench.lab.disks import Throttle, parse_disks
from backupbench.lab.vm import LabVM
from backupbench.recipe import model
from backupbench.sizing import capacity
from backupbench.units import MiB, parse_rate

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "field-note-d-s3-layouts.toml"
DISK = "1GiB"


def member_speeds(rate: int, work: Path, rounds: int) -> tuple[list[float], list[float]]:
    """One throttled member's sequential write and read, bytes/s, by fio in the guest, `rounds` times."""
    fio = ("fio --output-format=json --name=m --filename=/dev/vda --bs=1M --direct=1 --ioengine=libaio "
           "--iodepth=4 --size=48M --rw={rw}")
    print("reference: measuring one member disk with fio in a lab VM")
    with LabVM(parse_disks(f"1x{DISK}"), throttle=Throttle(bps_total=rate), work_parent=work) as vm:
        speeds: dict[str, list[float]] = {"write": [], "read": []}
        for _ in range(rounds):
            for rw in speeds:
                done = vm.run(fio.format(rw=rw), timeout=600)
                if done.returncode != 0:
                    sys.exit(f"fio failed in the guest:\n{done.output}")
                text = done.output[done.output.index("{"):]
                speeds[rw].append(json.loads(text)["jobs"][0][rw]["bw_bytes"])
    return speeds["write"], speeds["read"]


def data_disks(spec: Any, disk_bytes: int) -> float:
    """How many disks' worth of data the layout stores: its usable capacity / one disk."""
    sizes = (disk_bytes,) * len(spec.devices)
    if spec.kind == "minio-ec":
        shape = capacity.LayoutSpec("minio-ec", sizes, parity=spec.parity)
    elif spec.kind == "mdraid":
        shape = capacity.LayoutSpec(f"raid{spec.level}", sizes)
    elif spec.vdev.startswith("draid"):
        shape = capacity.LayoutSpec(spec.vdev, sizes, draid_data=spec.draid_data, draid_spares=spec.draid_spares)
    else:
        shape = capacity.LayoutSpec(spec.vdev, sizes)
    return capacity.usable_capacity(shape).usable / disk_bytes


def run_lab(recipe: Path, rate: str, work: Path) -> tuple[float, dict, str]:
    results = work / "results"
    started = time.monotonic()
    # The lab's step lines (stderr) go to the terminal: the run takes minutes.
    done = subprocess.run([sys.executable, "-m", "backupbench", "lab", str(recipe), "--disks", f"6x{DISK}",
                           "--disk-rate", rate, "--results", str(results), "--work-dir", str(work)],
                          stdout=subprocess.PIPE, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"backupbench lab failed ({done.returncode}):\n{done.stdout[-3000:]}")
    with sqlite3.connect(results / "results.db") as db:
        [(run_id,)] = db.execute("SELECT run_id FROM runs").fetchall()
    run = json.loads((results / "runs" / run_id / "result.json").read_text())
    return wall, run, done.stdout


def members_read(figures: dict, members: list[str]) -> float:
    """MiB/s the member disks read on average during the phase (the monitor's rMB/s, MB = MiB)."""
    return sum(figures.get(f"mon.{disk}.rMB_s.avg", 0.0) for disk in members)


def winner(speeds: dict[str, float]) -> str:
    ranked = sorted(speeds.items(), key=lambda item: item[1], reverse=True)
    (best, top), (second, runner_up) = ranked[0], ranked[1]
    return f"{best} ({top:.1f} MiB/s), {top / runner_up:.2f}x {second} ({runner_up:.1f} MiB/s)"


def recipe_text(objects: int, concurrency: int, rounds: int) -> str:
    """The example with the given load, its s3 workload listed `rounds` times (each layout runs
    them one after another: '<layout>/<n>-s3/put')."""
    text = EXAMPLE.read_text().replace("objects = 200", f"objects = {objects}")
    text = text.replace("concurrency = 16", f"concurrency = {concurrency}")
    workload = text[text.index("[[workload]]"):]
    return text + ("\n" + workload) * (rounds - 1)


def round_groups(layout: str, rounds: int) -> list[str]:
    """Where apply stored each round of the workload on a layout (runner/apply.py)."""
    return [layout] if rounds == 1 else [f"{layout}/{n}-s3" for n in range(1, rounds + 1)]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", default="1MiB/s", help="per-disk limit (low enough that disks, not the "
                                                         "emulated CPU, set the figures)")
    parser.add_argument("--objects", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3, help="times the reference and the s3 workload run")
    parser.add_argument("--work-dir", type=Path, default=None)
    args = parser.parse_args()
    args.rounds = max(1, args.rounds)
    return args


def main() -> int:
    args = parse_args()
    require("field_note_d", root=True, tools=("qemu-system-x86_64", "busybox", "depmod", "dpkg-deb"))
    rate = parse_rate(args.rate)
    work = Path(tempfile.mkdtemp(prefix="bench-fnd-", dir=args.work_dir))
    try:
        writes, reads = member_speeds(rate, work, args.rounds)
        write_ref, read_ref = statistics.median(writes), statistics.median(reads)
        print(f"reference: one member disk writes {spread([w / MiB for w in writes]).text(2, ' MiB/s')}, reads "
              f"{spread([r / MiB for r in reads]).text(2, ' MiB/s')} (throttle {rate / MiB:g} MiB/s)")
        recipe_path = work / "field-note-d.toml"
        recipe_path.write_text(recipe_text(args.objects, args.concurrency, args.rounds))
        recipe = model.load(recipe_path)
        wall, run, _ = run_lab(recipe_path, args.rate, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"field note D end to end (`backupbench lab`, 4 layouts, {args.objects} x 1 MiB objects, "
          f"{args.concurrency} streams, PUT then GET, {args.rounds} rounds): {wall:.0f} s")
    report(run, recipe, args.rounds, write_ref, read_ref)
    return 0


def report(run: dict, recipe: Any, rounds: int, write_ref: float, read_ref: float) -> None:
    ops = {op["name"]: op["figures"] for op in run["operations"]}
    stacks = run["host"]["device_stacks"]
    print(f"{'layout':<9} {'data':>5} {'ceiling':>8} {'PUT':>6} {'PUT/ceil':>8} {'GET':>6} {'GET/ceil':>8} "
          f"{'disk reads':>10} {'GET from':>8} {'guest CPU':>9}  (median round)")
    puts, gets, lines = {}, {}, []
    for spec in recipe.layout:
        disks = data_disks(spec, parse_disks(f"1x{DISK}")[0].size)
        write_ceiling, read_ceiling = write_ref * disks / MiB, read_ref * disks / MiB
        groups = round_groups(spec.name, rounds)
        put_rounds = [ops[f"{group}/put"]["effective_bw"] / MiB for group in groups]
        get_rounds = [ops[f"{group}/get"]["effective_bw"] / MiB for group in groups]
        # The round whose PUT is the median one stands for the layout in the table.
        middle = groups[sorted(range(rounds), key=lambda i: put_rounds[i])[rounds // 2]]
        put, get = ops[f"{middle}/put"], ops[f"{middle}/get"]
        puts[spec.name], gets[spec.name] = statistics.median(put_rounds), statistics.median(get_rounds)
        busy = put.get("mon.cpu_user.avg", 0) + put.get("mon.cpu_system.avg", 0)
        read = members_read(get, stacks[middle]["members"])
        get_mib = get["effective_bw"] / MiB
        source = "disks" if read >= 0.5 * get_mib else "memory"
        put_mib = put["effective_bw"] / MiB
        print(f"{spec.name:<9} {disks:5.1f} {write_ceiling:7.1f}w {put_mib:6.1f} {put_mib / write_ceiling:8.2f} "
              f"{get_mib:6.1f} {get_mib / read_ceiling:8.2f} {read:9.1f}M {source:>8} {busy:8.0f}%")
        lines.append(ratio_line(f"PUT / member ceiling, {spec.name}", [v / write_ceiling for v in put_rounds],
                                what="rounds", digits=2))
        lines.append(ratio_line(f"GET / member ceiling, {spec.name}", [v / read_ceiling for v in get_rounds],
                                what="rounds", digits=2))
    print("ceiling = member disk speed x data disks; disk reads = MiB/s the members read during GET (below half "
          "the GET speed: served from memory, the page cache or the ARC); guest CPU = user + system during PUT (near 100%: "
          "the emulated CPU, not the disks, set the figure)")
    print("\n".join(lines))
    print(f"PUT winner: {winner(puts)}")
    print(f"GET winner: {winner(gets)}")


if __name__ == "__main__":
    sys.exit(main())
