"""Real tests: loop devices on files the test made, fio writing to them, sysstat's iostat
watching the same device. Root only; every loop device and mount is removed, even on failure.
Only the devices these tests create are written to."""

from __future__ import annotations

import csv
import json
import os
import threading
import time
from pathlib import Path

import pytest

from host_support import require_tools

from backupbench.monitor import Sampler, device_stack
from backupbench.process import Background, run

# alone: the sampler's and iostat's 1 s windows are compared to 5%; other workers' CPU load shifts them.
pytestmark = [pytest.mark.real, pytest.mark.alone]


def need(*tools: str) -> None:
    require_tools(*tools)


@pytest.fixture
def disk(loop_device):
    """A 256 MiB loop device on the test's own file: (name, /dev path, backing file)."""
    need("fio")
    loop = loop_device("disk", 256 * 1024 * 1024)
    return loop.name, loop.device, loop.backing


@pytest.fixture
def mounted(disk, tmp_path: Path):
    """ext4 on the loop device, mounted under tmp_path; unmounted before the loop is detached."""
    need("mkfs.ext4", "mount", "umount")
    _, dev, _ = disk
    run(["mkfs.ext4", "-q", "-F", dev], timeout=120)
    target = tmp_path / "mnt"
    target.mkdir()
    run(["mount", dev, str(target)], timeout=30)
    try:
        yield target
    finally:
        run(["umount", str(target)], timeout=60, check=False)


def fio_write(target: str, size: str, *extra: str) -> list[str]:
    return ["fio", "--name=monitor-test", f"--filename={target}", "--rw=write", "--bs=1m", f"--size={size}",
            "--direct=1", "--ioengine=psync", "--output-format=json", *extra]


def test_sampler_shows_the_fio_writes_on_the_loop_device(disk, tmp_path):
    name, dev, _ = disk
    csv_path = tmp_path / "monitor.csv"
    with Sampler(interval=0.25, devices=[name], csv_path=csv_path) as sampler:
        # rate-limited so the write spans several samples: 64 MiB at 32 MiB/s
        run(fio_write(dev, "64m", "--rate=32m"), timeout=120)
        time.sleep(0.3)   # let one more tick close the interval holding the last writes
    s = sampler.summary
    assert s.errors == [] and s.samples >= 2
    assert s[f"{name}.wMB_s"].avg > 0 and s[f"{name}.w_s"].avg > 0 and s[f"{name}.wMB_s"].max > 0
    # the sampler saw every byte: time-weighted average x duration = the 64 MiB fio wrote
    assert s[f"{name}.wMB_s"].avg * s.duration_s == pytest.approx(64.0, abs=0.01)
    writes = s[f"{name}.w_s"].avg * s.duration_s
    assert writes == pytest.approx(round(writes), abs=0.01) and writes >= 64   # whole requests (the loop may split 1 MiB)
    rows = list(csv.DictReader(csv_path.open()))
    assert len(rows) == s.samples
    elapsed = [0.0] + [float(r["elapsed_s"]) for r in rows]
    written = sum(float(r[f"{name}:wMB/s"]) * (elapsed[i + 1] - elapsed[i]) for i, r in enumerate(rows))
    assert written == pytest.approx(64.0, abs=0.5)   # CSV cells are rounded to 2 decimals


def test_stack_of_a_filesystem_on_the_loop_resolves_to_it_and_its_backing_file(disk, mounted):
    name, _, backing = disk
    stack = device_stack(mounted / "jobs" / "full.vbk")    # does not exist yet: its mount counts
    assert stack.top == name and stack.members == (name,) and stack.all_names == [name]
    assert stack.fs_type == "ext4" and stack.mount_point == str(mounted)
    assert os.path.realpath(stack.backing_files[name]) == os.path.realpath(backing)
    # and sampling that stack sees a workload on the filesystem
    with Sampler(interval=0.25, devices=stack.all_names) as sampler:
        run(fio_write(str(mounted / "f.dat"), "32m", "--rate=32m"), timeout=120)
        time.sleep(0.3)
    written = sampler.summary[f"{name}.wMB_s"].avg * sampler.summary.duration_s
    assert written > 32.0 - 1e-6     # the 32 MiB file, plus whatever ext4 wrote for it


def test_iostat_agrees_within_5_percent_on_the_same_device_and_window(disk):
    """fio writes at a steady 20 MiB/s; iostat -x runs for 4 one-second intervals in the
    middle of it while the Sampler samples every 0.5 s. Our samples that lie inside iostat's
    window, averaged over time, must agree with iostat's average within 5 %."""
    need("iostat")
    name, dev, _ = disk
    samples = []
    started = threading.Event()

    def collect(sample):
        samples.append(sample)
        if name in sample.disks and sample.disks[name].w_s > 0:
            started.set()

    fio = Background(fio_write(dev, "192m", "--bs=256k", "--rate=20m", "--time_based", "--runtime=10"))
    try:
        with Sampler(interval=0.5, devices=[name], on_sample=collect) as sampler:
            assert started.wait(timeout=30), "fio did not start writing"
            time.sleep(1.0)   # past fio's start-up: steady rate from here
            t0 = time.monotonic()
            out = run(["iostat", "-x", "-d", "-y", "-m", "-o", "JSON", name, "1", "4"], timeout=60).stdout
            t1 = time.monotonic()
        fio.check(fio.wait(timeout=60))
    finally:
        fio.stop()
    reports = [d for stat in json.loads(out)["sysstat"]["hosts"][0]["statistics"]
               for d in stat["disk"] if d["disk_device"] == name]
    assert len(reports) == 4
    io_ws = sum(r["w/s"] for r in reports) / 4
    io_mbs = sum(r["wMB/s"] for r in reports) / 4

    inside = [s for s in samples
              if sampler.started_at + s.elapsed_s - s.interval_s >= t0
              and sampler.started_at + s.elapsed_s <= t1 and name in s.disks]
    assert len(inside) >= 4
    span = sum(s.interval_s for s in inside)
    our_ws = sum(s.disks[name].w_s * s.interval_s for s in inside) / span
    our_mbs = sum(s.disks[name].wMB_s * s.interval_s for s in inside) / span
    print(f"iostat w/s {io_ws:.2f} wMB/s {io_mbs:.3f} | sampler w/s {our_ws:.2f} wMB/s {our_mbs:.3f} "
          f"over {len(inside)} samples ({span:.1f} s)")
    assert our_ws == pytest.approx(io_ws, rel=0.05)
    assert our_mbs == pytest.approx(io_mbs, rel=0.05)
    assert our_mbs == pytest.approx(20.0, rel=0.15)    # and both see fio's 20 MiB/s (MiB, as iostat -m)


def test_iostat_agrees_on_request_sizes_when_requests_are_cut_at_64k(disk):
    """The loop device cuts every request at 64 KiB (max_sectors_kb, as a 64 KiB stripe unit
    would); fio reads and writes a mix of 4 KiB and 512 KiB blocks, so the device sees 4 KiB
    requests and 64 KiB pieces of the large ones. iostat -x runs for 4 one-second intervals in
    the middle; our rareq-sz / wareq-sz over the same window, per request as iostat counts
    them, must agree with iostat's within 5 %."""
    need("iostat")
    name, dev, _ = disk
    # The test's own loop device; the limit outlives the loop's detach, so it is put back.
    limit = Path(f"/sys/block/{name}/queue/max_sectors_kb")
    kept = limit.read_text().strip()
    limit.write_text("64")
    try:
        measure_request_sizes(name, dev)
    finally:
        limit.write_text(kept)


def measure_request_sizes(name: str, dev: str) -> None:
    samples = []
    started = threading.Event()

    def collect(sample):
        samples.append(sample)
        if name in sample.disks and sample.disks[name].w_s > 0:
            started.set()

    fio = Background(["fio", "--name=monitor-sizes", f"--filename={dev}", "--rw=rw", "--bssplit=4k/50:512k/50",
                      "--size=192m", "--direct=1", "--ioengine=psync", "--rate=8m,8m", "--time_based",
                      "--runtime=10", "--output-format=json"])
    try:
        with Sampler(interval=0.5, devices=[name], on_sample=collect) as sampler:
            assert started.wait(timeout=30), "fio did not start writing"
            time.sleep(1.0)
            t0 = time.monotonic()
            out = run(["iostat", "-x", "-d", "-y", "-o", "JSON", name, "1", "4"], timeout=60).stdout
            t1 = time.monotonic()
        fio.check(fio.wait(timeout=60))
    finally:
        fio.stop()
    reports = [d for stat in json.loads(out)["sysstat"]["hosts"][0]["statistics"]
               for d in stat["disk"] if d["disk_device"] == name]
    assert len(reports) == 4
    inside = [s for s in samples
              if sampler.started_at + s.elapsed_s - s.interval_s >= t0
              and sampler.started_at + s.elapsed_s <= t1 and name in s.disks]
    assert len(inside) >= 4
    for rate, size in (("r_s", "rareq_sz"), ("w_s", "wareq_sz")):
        iostat_key = size.replace("_", "-")
        iostat_rate = rate.replace("_", "/")
        # per request over the window: KiB moved / requests, from either side's per-interval figures
        theirs = sum(r[iostat_key] * r[iostat_rate] for r in reports) / sum(r[iostat_rate] for r in reports)
        requests = sum(getattr(s.disks[name], rate) * s.interval_s for s in inside)
        ours = sum(getattr(s.disks[name], size) * getattr(s.disks[name], rate) * s.interval_s for s in inside) / requests
        print(f"{iostat_key}: iostat {theirs:.2f} KiB | sampler {ours:.2f} KiB over {requests:.0f} requests")
        assert ours == pytest.approx(theirs, rel=0.05)
        # and both see the mix: half the blocks 4 KiB, half 512 KiB cut into 8 x 64 KiB
        assert ours == pytest.approx((4 + 8 * 64) / 9, rel=0.2)
        assert max(getattr(s.disks[name], size) for s in inside) <= 64.0
