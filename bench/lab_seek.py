"""Seeking lab disks (`backupbench lab --disk-model hdd`) against the disk model's own arithmetic.

Usage: python bench/lab_seek.py [--rounds 3] [--runtime 8] [--transfer-rate 200MB/s] [--disk-size 4GiB]
                                [--work-dir DIR]

One lab VM with two disks served by nbdkit and the model (lab/diskmodel.py, defaults of a
7,200 rpm disk). Each round, fio in the guest reads 512 KiB blocks one at a time: sequentially
over the first disk, then at random places over the whole second one (lab/selftest.py). A
warm-up round goes first, not counted: in the first seconds after boot TCG is still translating
the guest's I/O path, and a sequential read measured 58 % of the rate there against 83-94 % after.
- Sequential MiB/s / the model's transfer rate, and random MiB/s / the model's
  512 KiB / (mean seek + half a revolution + transfer). Goals: 0.8-1.05 each.
- The host CPU the model costs: user + system time of the nbdkit processes per MiB read
  (= % of one core per MiB/s), over each round's two patterns. Reference measured in the same
  run: QEMU's own CPU for the same reads, printed as a ratio (a cost, no goal).
Exits 0 when it measured, whether or not the goals were met.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from _common import cannot_run, ratio_line, require, spread
from backupbench.errors import ToolMissingError
from backupbench.lab import nbd, selftest
from backupbench.lab.diskmodel import DiskModel
from backupbench.lab.disks import parse_disks
from backupbench.lab.image import ensure_image
from backupbench.lab.vm import LabVM
from backupbench.units import KiB, MiB, format_size, parse_rate, parse_size

BLOCK = 512 * KiB
TICKS = os.sysconf("SC_CLK_TCK")


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
    result = vm.run(selftest.seek_reads_script(vm.guest_device(0), vm.guest_device(1), str(out), runtime_s=runtime),
                    timeout=runtime * 10 + 120)
    if result.returncode != 0:
        sys.exit(f"the reads failed in the guest:\n{result.output}")
    after = [cpu_seconds(pid) for pid in (*pids, qemu)]
    figures = selftest.read_seek_results(out)
    read_mib = sum(json.loads((out / f"{name}.json").read_text())["jobs"][0]["read"]["io_bytes"]
                   for name in selftest.READS) / MiB
    return {**figures, "nbdkit_cpu": sum(after[:-1]) - sum(before[:-1]), "qemu_cpu": after[-1] - before[-1],
            "read_mib": read_mib}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runtime", type=int, default=8, help="fio seconds per pattern and round")
    parser.add_argument("--transfer-rate", default="200MB/s")
    parser.add_argument("--disk-size", default="4GiB")
    parser.add_argument("--work-dir", type=Path, default=None)
    args = parser.parse_args()
    require("lab_seek", root=True, tools=("qemu-system-x86_64", "busybox", "depmod", "dpkg-deb", "nbdkit"))
    try:
        nbd.filter_path()
    except ToolMissingError as exc:
        cannot_run("lab_seek", f"{exc.message} ({exc.fix})")

    model = DiskModel(transfer_rate=parse_rate(args.transfer_rate))
    size = parse_size(args.disk_size)
    sequential_model, random_model = model.transfer_rate, model.random_rate(BLOCK, size, size)
    print(f"{model.describe()}; 2 x {format_size(size)} disks, 512 KiB reads at queue depth 1, "
          f"{args.runtime} s per pattern")
    print(f"model: sequential {sequential_model / MiB:.1f} MiB/s, random {random_model / MiB:.1f} MiB/s "
          f"({model.random_read_seconds(BLOCK, size, size) * 1000:.2f} ms a read)")
    image = ensure_image()
    rounds = []
    started = time.monotonic()
    with LabVM(parse_disks(f"2x{args.disk_size}"), disk_model=model, image=image,
               **({"work_parent": args.work_dir} if args.work_dir else {})) as vm:
        qemu = qemu_pid()
        warm = one_round(vm, 0, min(3, args.runtime), qemu)
        print(f"warm-up (not counted): sequential {warm['sequential'] / MiB:.1f} MiB/s, random "
              f"{warm['random'] / MiB:.1f} MiB/s")
        for index in range(1, max(1, args.rounds) + 1):
            figures = one_round(vm, index, args.runtime, qemu)
            rounds.append(figures)
            print(f"round {index}: sequential {figures['sequential'] / MiB:.1f} MiB/s, random "
                  f"{figures['random'] / MiB:.1f} MiB/s; host CPU nbdkit {figures['nbdkit_cpu']:.2f} s, "
                  f"QEMU {figures['qemu_cpu']:.2f} s for {figures['read_mib']:.0f} MiB")
        served = [vm.disk_servers.stats(i) for i in range(2)]
    print(f"disk model: {sum(d.get('requests', 0) for d in served)} requests, "
          f"{sum(d.get('late', 0) for d in served)} late (the host slower than the model), "
          f"{sum(d.get('behind_ns', 0) for d in served) / 1e9:.2f} s behind the model's deadlines")
    print(f"lab VM with seeking disks, {len(rounds)} rounds: {time.monotonic() - started:.0f} s end to end")
    report(rounds, sequential_model, random_model)
    return 0


def report(rounds: list[dict[str, float]], sequential_model: float, random_model: float) -> None:
    def verdict(ratios: list[float]) -> str:
        return "ok" if 0.8 <= spread(ratios).median <= 1.05 else "OUTSIDE GOAL"

    sequential = [r["sequential"] / sequential_model for r in rounds]
    random_ = [r["random"] / random_model for r in rounds]
    print(ratio_line("sequential 512 KiB read MiB/s / model's", sequential, "0.8-1.05", verdict(sequential),
                     what="rounds"))
    print(ratio_line("random 512 KiB read MiB/s / model's", random_, "0.8-1.05", verdict(random_), what="rounds"))
    per_mib = [r["nbdkit_cpu"] / r["read_mib"] for r in rounds]
    cost = spread(per_mib, "rounds")
    print(f"host CPU of the disk model: {cost.median * 1000:.2f} ms per MiB served "
          f"({cost.low * 1000:.2f}-{cost.high * 1000:.2f}, {cost.count} rounds), i.e. {cost.median * 100:.3f} % of one core "
          "per MiB/s")
    print(ratio_line("nbdkit CPU / QEMU CPU for the same reads", [r["nbdkit_cpu"] / r["qemu_cpu"] for r in rounds],
                     "(a cost)", what="rounds"))


if __name__ == "__main__":
    sys.exit(main())
