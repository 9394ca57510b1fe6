"""Seeking lab disks (`backupbench lab --disk-model hdd`) against the disk model's own arithmetic.

Usage: python bench/lab_seek.py [--rounds 3] [--runtime 8] [--transfer-rate 200MB/s] [--disk-size 4GiB]
                                [--streams-rate 50MiB/s] [--work-dir DIR]

One lab VM with two disks served by nbdkit and the model (lab/diskmodel.py, defaults of a
7,200 rpm disk, queue depth 32). Each round, fio in the guest reads 512 KiB blocks: sequentially
over the first disk one at a time, then at random places over the whole second one, one at a time
and 32 in flight (lab/selftest.py). A warm-up round goes first, not counted: in the first seconds
after boot TCG is still translating the guest's I/O path, and a sequential read measured 58 % of
the rate there against 83-94 % after.
- Sequential MiB/s / the model's transfer rate; random MiB/s at queue depth 1 / the model's
  512 KiB / (mean seek + half a revolution + transfer); random MiB/s at queue depth 32 / the
  model's sweep over the 15 QEMU lets wait (`random_rate_queued`). Goals: 0.8-1.05 each.
  Random at 32 / at 1: the queue's gain (a figure; the model's beside it).
- The host CPU the model costs: user + system time of the nbdkit processes per MiB read
  (= % of one core per MiB/s), over each round's patterns. Reference measured in the same
  run: QEMU's own CPU for the same reads, printed as a ratio (a cost, no goal).
Then the parallel streams: field note A (lab/selftest.py) on four disks at --streams-rate, as the
example recipe runs it (4 jobs at queue depth 16) and as the field note's 16 jobs at queue depth 1,
once on disks with the default queue and once on disks serving in arrival order (queue depth 1,
the model before command queueing), a VM each. Striped/linear goal with the queue at 4 x 16:
3.0-4.2; the others are figures.
Exits 0 when it measured, whether or not the goals were met.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from _common import cannot_run, ratio_line, require, spread
from backupbench.errors import ToolMissingError
from backupbench.lab import nbd, selftest
from backupbench.lab.diskmodel import DiskModel
from backupbench.lab.disks import parse_disks
from backupbench.lab.image import LabImage, ensure_image
from backupbench.lab.vm import LabVM
from backupbench.units import KiB, MiB, format_size, parse_rate, parse_size

BLOCK = 512 * KiB
DEPTH = 32
TICKS = os.sysconf("SC_CLK_TCK")
STREAMS = ((4, 16), (16, 1))   # field note A's (jobs, iodepth): the example recipe's, the field note's


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (/proc/PID/stat fields 14 and 15)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rfind(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def qemu_pid() -> int:
    """This process's QEMU child (the lab's only one): the reference's CPU."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2:].split()
            if int(fields[1]) == os.getpid() and "qemu-system" in stat[:stat.rfind(")")]:
                return int(entry.name)
    raise RuntimeError("no QEMU child found")


def one_round(vm: LabVM, index: int, runtime: int, qemu: int) -> dict[str, float]:
    out = vm.out_dir / f"round-{index}"
    out.mkdir()
    pids = vm.disk_servers.pids
    before = [cpu_seconds(pid) for pid in (*pids, qemu)]
    script = selftest.seek_reads_script(vm.guest_device(0), vm.guest_device(1), str(out), runtime_s=runtime,
                                        random_depths=(1, DEPTH))
    result = vm.run(script, timeout=runtime * 15 + 120)
    if result.returncode != 0:
        sys.exit(f"the reads failed in the guest:\n{result.output}")
    after = [cpu_seconds(pid) for pid in (*pids, qemu)]
    figures = selftest.read_seek_results(out)
    return {**figures, "nbdkit_cpu": sum(after[:-1]) - sum(before[:-1]), "qemu_cpu": after[-1] - before[-1],
            "read_mib": selftest.read_bytes(out) / MiB}


def reads(args: argparse.Namespace, model: DiskModel, image: LabImage) -> list[dict[str, float]]:
    """The reads' rounds in one VM of two disks, after a warm-up round."""
    queued = selftest.random_read_name(DEPTH)
    rounds = []
    with LabVM(parse_disks(f"2x{args.disk_size}"), disk_model=model, image=image,
               **({"work_parent": args.work_dir} if args.work_dir else {})) as vm:
        qemu = qemu_pid()
        warm = one_round(vm, 0, min(3, args.runtime), qemu)
        print(f"warm-up (not counted): sequential {warm['sequential'] / MiB:.1f} MiB/s, random "
              f"{warm['random'] / MiB:.1f} MiB/s, at queue depth {DEPTH} {warm[queued] / MiB:.1f} MiB/s")
        for index in range(1, max(1, args.rounds) + 1):
            figures = one_round(vm, index, args.runtime, qemu)
            rounds.append(figures)
            print(f"round {index}: sequential {figures['sequential'] / MiB:.1f} MiB/s, random "
                  f"{figures['random'] / MiB:.1f} MiB/s, at queue depth {DEPTH} {figures[queued] / MiB:.1f} MiB/s; "
                  f"host CPU nbdkit {figures['nbdkit_cpu']:.2f} s, QEMU {figures['qemu_cpu']:.2f} s for "
                  f"{figures['read_mib']:.0f} MiB")
        served = [vm.disk_servers.stats(i) for i in range(2)]
    print(f"disk model: {sum(d.get('requests', 0) for d in served)} requests, "
          f"{sum(d.get('late', 0) for d in served)} late (the host slower than the model), "
          f"{sum(d.get('behind_ns', 0) for d in served) / 1e9:.2f} s behind the model's deadlines, "
          f"{sum(d.get('reordered', 0) for d in served)} served before an older one")
    return rounds


def streams(args: argparse.Namespace, depth: int, image: LabImage) -> dict[tuple[int, int], list[float]]:
    """Field note A's striped/linear ratio per (jobs, iodepth), each round, on four disks whose
    queue is `depth` deep."""
    model = DiskModel(transfer_rate=parse_rate(args.streams_rate), queue_depth=depth)
    ratios: dict[tuple[int, int], list[float]] = {shape: [] for shape in STREAMS}
    with LabVM(parse_disks(f"4x{args.disk_size}"), disk_model=model, image=image,
               **({"work_parent": args.work_dir} if args.work_dir else {})) as vm:
        for index in range(1, max(1, args.rounds) + 1):
            for jobs, iodepth in STREAMS:
                out = vm.out_dir / f"streams-{index}-{jobs}x{iodepth}"
                out.mkdir()
                script = selftest.field_note_a_script(vm.guest_devices(), str(out), runtime_s=args.runtime,
                                                      jobs=jobs, iodepth=iodepth)
                result = vm.run(script, timeout=args.runtime * 10 + 300)
                if result.returncode != 0:
                    sys.exit(f"field note A failed in the guest:\n{result.output}")
                figures = selftest.read_results(out)
                ratios[(jobs, iodepth)].append(figures.ratio)
                print(f"queue depth {depth}, round {index}, {jobs} jobs x {iodepth}: linear "
                      f"{figures.linear.mib_s:.1f} MiB/s, striped {figures.striped.mib_s:.1f} MiB/s, "
                      f"{figures.ratio:.2f}x")
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runtime", type=int, default=8, help="fio seconds per pattern and round")
    parser.add_argument("--transfer-rate", default="200MB/s")
    parser.add_argument("--disk-size", default="4GiB")
    parser.add_argument("--streams-rate", default="50MiB/s", help="the transfer rate of field note A's four disks")
    parser.add_argument("--work-dir", type=Path, default=None)
    args = parser.parse_args()
    require("lab_seek", root=True, tools=("qemu-system-x86_64", "busybox", "depmod", "dpkg-deb", "nbdkit"))
    try:
        nbd.filter_path()
    except ToolMissingError as exc:
        cannot_run("lab_seek", f"{exc.message} ({exc.fix})")

    model = DiskModel(transfer_rate=parse_rate(args.transfer_rate))
    size = parse_size(args.disk_size)
    predicted = {"sequential": model.transfer_rate, "random": model.random_rate(BLOCK, size, size),
                 selftest.random_read_name(DEPTH): model.random_rate_queued(BLOCK, size, size,
                                                                           waiting=nbd.QEMU_IN_FLIGHT - 1)}
    print(f"{model.describe()}; 2 x {format_size(size)} disks, 512 KiB reads, {args.runtime} s per pattern")
    print("model: " + ", ".join(f"{name} {rate / MiB:.1f} MiB/s" for name, rate in predicted.items())
          + f" ({model.random_read_seconds(BLOCK, size, size) * 1000:.2f} ms a random read one at a time)")
    image = ensure_image()
    started = time.monotonic()
    rounds = reads(args, model, image)
    print(f"lab VM with seeking disks, {len(rounds)} rounds of reads: {time.monotonic() - started:.0f} s end to end")
    ratios = {depth: streams(args, depth, image) for depth in (DiskModel().queue_depth, 1)}
    report(rounds, predicted)
    report_streams(ratios)
    return 0


def report(rounds: list[dict[str, float]], predicted: dict[str, float]) -> None:
    def verdict(ratios: list[float]) -> str:
        return "ok" if 0.8 <= spread(ratios).median <= 1.05 else "OUTSIDE GOAL"

    for name, label in (("sequential", "sequential 512 KiB read MiB/s"), ("random", "random 512 KiB read MiB/s"),
                        (selftest.random_read_name(DEPTH), f"random 512 KiB read MiB/s at queue depth {DEPTH}")):
        ratios = [r[name] / predicted[name] for r in rounds]
        print(ratio_line(f"{label} / model's", ratios, "0.8-1.05", verdict(ratios), what="rounds"))
    queued = selftest.random_read_name(DEPTH)
    print(ratio_line(f"random 512 KiB read MiB/s at queue depth {DEPTH} / at 1", [r[queued] / r["random"] for r in rounds],
                     f"(the queue's gain; the model's {predicted[queued] / predicted['random']:.3f})", what="rounds"))
    per_mib = [r["nbdkit_cpu"] / r["read_mib"] for r in rounds]
    cost = spread(per_mib, "rounds")
    print(f"host CPU of the disk model: {cost.median * 1000:.2f} ms per MiB served "
          f"({cost.low * 1000:.2f}-{cost.high * 1000:.2f}, {cost.count} rounds), i.e. {cost.median * 100:.3f} % of one core "
          "per MiB/s")
    print(ratio_line("nbdkit CPU / QEMU CPU for the same reads", [r["nbdkit_cpu"] / r["qemu_cpu"] for r in rounds],
                     "(a cost)", what="rounds"))


def report_streams(ratios: dict[int, dict[tuple[int, int], list[float]]]) -> None:
    for depth, shapes in ratios.items():
        for (jobs, iodepth), values in shapes.items():
            label = f"field note A striped/linear, {jobs} jobs x {iodepth}, queue depth {depth}"
            if depth > 1 and (jobs, iodepth) == STREAMS[0]:
                median = spread(values).median
                print(ratio_line(label, values, "3.0-4.2", "ok" if 3.0 <= median <= 4.2 else "OUTSIDE GOAL",
                                 what="rounds", digits=2))
            else:
                print(ratio_line(label, values, "(a figure)", what="rounds", digits=2))


if __name__ == "__main__":
    sys.exit(main())
