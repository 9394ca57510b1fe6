"""Lab VM figures with a cached guest image: boot speed and field note A end to end.

Usage: python bench/lab.py [--boots 5] [--fna-runs 3] [--runtime 15] [--rate 50MiB/s] [--skip-fna]

1. Boot: time from QEMU's start to the first output of a command in the guest
   (`echo first`), over --boots boots. Goal: < 5 s.
2. Field note A (shared/docs/field-notes.md) end to end: from `LabVM(...)` (image cache
   check, disk images, boot) through LVM setup, fio on a linear LV pinned to one PV and on
   a `-i 4 -I 64k` striped LV (--runtime s each, 4 jobs, 512 KiB direct sequential writes),
   teardown, to the VM being gone. Goals: < 90 s in total, striped/linear 3.6-4.2 with every
   disk throttled to --rate. The guest's CPU is reported: above ~90 % the emulator, not the
   disks, would set the figure. Run --fna-runs times, each in a fresh VM: the median of the
   runs with their min-max.
The image is built first if it is not cached yet (that time is reported separately).
Exits 0 when it measured, whether or not the goals were met.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from _common import ratio_line, require, spread
from backupbench.lab import selftest
from backupbench.lab.disks import Throttle, parse_disks
from backupbench.lab.image import ensure_image
from backupbench.lab.vm import LabVM
from backupbench.units import MiB, parse_rate


def bench_boot(image, boots: int, work: Path | None) -> list[float]:
    firsts = []
    for index in range(boots):
        with LabVM(parse_disks("4x4GiB"), throttle=Throttle(bps_total=50 * MiB), image=image,
                   **({"work_parent": work} if work else {})) as vm:
            seen: list[float] = []
            vm.run(["echo", "first"], stream=lambda _text, seen=seen: seen.append(time.monotonic()) if not seen else None)
            assert vm.qemu_started is not None and seen
            first = seen[0] - vm.qemu_started
            firsts.append(first)
            print(f"boot {index + 1}: agent ready {vm.boot_seconds:.2f} s, first output {first:.2f} s after QEMU start")
    return firsts


def bench_field_note_a(runtime: int, rate: int, work: Path | None) -> tuple[float, selftest.FieldNoteA]:
    started = time.monotonic()
    with LabVM(parse_disks("4x4GiB"), throttle=Throttle(bps_total=rate), **({"work_parent": work} if work else {})) as vm:
        out = vm.out_dir / "fna"
        out.mkdir()
        result = vm.run(selftest.field_note_a_script(vm.guest_devices(), str(out), runtime_s=runtime))
        if result.returncode != 0:
            sys.exit(f"field note A failed in the guest:\n{result.output}")
        figures = selftest.read_results(out)
    return time.monotonic() - started, figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boots", type=int, default=5)
    parser.add_argument("--runtime", type=int, default=15, help="fio seconds per layout")
    parser.add_argument("--rate", default="50MiB/s", help="per-disk limit")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--skip-fna", action="store_true")
    parser.add_argument("--fna-runs", type=int, default=3, help="field note A runs, each in a fresh VM")
    args = parser.parse_args()
    require("lab", root=True, tools=("qemu-system-x86_64", "busybox", "depmod", "dpkg-deb"))

    started = time.monotonic()
    image = ensure_image(progress=lambda m: print(f"image: {m}"))
    print(f"image ready in {time.monotonic() - started:.1f} s: {image.directory} ({image.kernel_release})")

    firsts = bench_boot(image, args.boots, args.work_dir) if args.boots else []
    if firsts:
        boot = spread(firsts, "boots")
        print(f"QEMU start -> first command output: {boot.text(2, ' s')} (goal < 5 s) "
              f"{'ok' if boot.median < 5 else 'ABOVE GOAL'}")
    if not args.skip_fna:
        report_field_note_a(args, parse_rate(args.rate))
    return 0


def report_field_note_a(args: argparse.Namespace, rate: int) -> None:
    totals, ratios = [], []
    for run in range(1, max(1, args.fna_runs) + 1):
        total, figures = bench_field_note_a(args.runtime, rate, args.work_dir)
        totals.append(total)
        ratios.append(figures.ratio)
        for fig in (figures.linear, figures.striped):
            print(f"run {run}: {fig.layout:<8} {fig.mib_s:7.1f} MiB/s {fig.write_iops:6.0f} IOPS  "
                  f"guest CPU {fig.guest_cpu_busy:5.1%}")
        print(f"run {run}: end to end {total:.1f} s, striped/linear {figures.ratio:.2f}")
    total = spread(totals)
    print(f"field note A end to end: {total.text(1, ' s')} (goal < 90 s) {'ok' if total.median < 90 else 'ABOVE GOAL'}; "
          f"disks {rate / MiB:g} MiB/s each, {args.runtime} s per layout")
    ratio = spread(ratios).median
    print(ratio_line("field note A striped/linear MiB/s", ratios, "3.6-4.2",
                     "ok" if 3.6 <= ratio <= 4.2 else "OUTSIDE GOAL", digits=2))


if __name__ == "__main__":
    sys.exit(main())
