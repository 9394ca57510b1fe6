"""Lab VM figures with a cached guest image: boot speed and field note A end to end.

Usage: python bench/lab.py [--boots 5] [--runtime 15] [--rate 50MiB/s] [--skip-fna]

1. Boot: time from QEMU's start to the first output of a command in the guest
   (`echo first`), over --boots boots. Goal: < 5 s.
2. Field note A (shared/docs/field-notes.md) end to end: from `LabVM(...)` (image cache
   check, disk images, boot) through LVM setup, fio on a linear LV pinned to one PV and on
   a `-i 4 -I 64k` striped LV (--runtime s each, 4 jobs, 512 KiB direct sequential writes),
   teardown, to the VM being gone. Goals: < 90 s in total, striped/linear 3.6-4.2 with every
   disk throttled to --rate. The guest's CPU is reported: above ~90 % the emulator, not the
   disks, would set the figure.
The image is built first if it is not cached yet (that time is reported separately).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

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
    args = parser.parse_args()

    started = time.monotonic()
    image = ensure_image(progress=lambda m: print(f"image: {m}"))
    print(f"image ready in {time.monotonic() - started:.1f} s: {image.directory} ({image.kernel_release})")

    firsts = bench_boot(image, args.boots, args.work_dir) if args.boots else []
    if firsts:
        median = statistics.median(firsts)
        print(f"QEMU start -> first command output: median {median:.2f} s, min {min(firsts):.2f}, "
              f"max {max(firsts):.2f} over {len(firsts)} boots (goal < 5 s) {'ok' if median < 5 else 'ABOVE GOAL'}")
    if not args.skip_fna:
        rate = parse_rate(args.rate)
        total, figures = bench_field_note_a(args.runtime, rate, args.work_dir)
        for fig in (figures.linear, figures.striped):
            print(f"{fig.layout:<8} {fig.mib_s:7.1f} MiB/s {fig.write_iops:6.0f} IOPS  guest CPU {fig.guest_cpu_busy:5.1%}")
        ratio_ok = 3.6 <= figures.ratio <= 4.2
        print(f"field note A end to end: {total:.1f} s (goal < 90 s) {'ok' if total < 90 else 'ABOVE GOAL'}; "
              f"striped/linear {figures.ratio:.2f} (goal 3.6-4.2) {'ok' if ratio_ok else 'OUTSIDE GOAL'}; "
              f"disks {rate / MiB:g} MiB/s each, {args.runtime} s per layout")
    return 0


if __name__ == "__main__":
    sys.exit(main())
