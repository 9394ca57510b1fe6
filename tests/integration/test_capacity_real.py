"""The capacity model against the real storage on this host's loop devices (issue 41): XFS and
ext4 as `df -B1` shows them, btrfs raid1 as `btrfs filesystem usage -b` estimates it and as
much data as it takes before ENOSPC, MinIO erasure coding as its admin API reports it and as
many objects as it takes before it refuses writes. Agreement within 1% (XFS, ext4 and btrfs's
estimate to the byte). ZFS, md and LVM need the lab VM: test_lab_capacity.py.

Root only; every mount, loop device and server is undone, also on failure."""

from __future__ import annotations

import errno
import json
import os
import subprocess
from pathlib import Path

import pytest

from host_support import require_tools

from backupbench.sizing.capacity import LayoutSpec, usable_capacity
from backupbench.sizing.capacity_fs import ext4_space, xfs_space

pytestmark = [pytest.mark.real, pytest.mark.root]
GiB, MiB = 2**30, 2**20


def _run(*argv: str, timeout: float = 120) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=timeout).stdout


def _near(measured: int, model: int, what: str, rel: float = 0.01) -> None:
    """Within `rel` of the measurement; the line (pytest -s) is docs/sizing.md's table."""
    print(f"{what}: model {model:,} measured {measured:,} ({100 * (model - measured) / measured:+.3f}%)")
    assert model == pytest.approx(measured, rel=rel), what


def _df(mounted: Path) -> tuple[int, int]:
    """df -B1's size and available, as statvfs gives them."""
    stat = os.statvfs(mounted)
    return stat.f_blocks * stat.f_frsize, stat.f_bavail * stat.f_frsize


@pytest.fixture
def mounted(tmp_path: Path):
    """mount(device, name) on a folder under tmp_path; unmounted after the test."""
    points: list[Path] = []

    def mount(device: str, name: str) -> Path:
        point = tmp_path / name
        point.mkdir()
        _run("mount", device, str(point))
        points.append(point)
        return point

    yield mount
    for point in reversed(points):
        subprocess.run(["umount", str(point)], capture_output=True, timeout=60)


@pytest.mark.parametrize("filesystem,mkfs", [
    ("xfs", ("mkfs.xfs", "-q", "-f")),
    ("xfs striped", ("mkfs.xfs", "-q", "-f", "-d", "su=64k,sw=4")),  # LVM -i 4 -I 64k's geometry
    ("ext4", ("mkfs.ext4", "-q", "-F")),
])
def test_xfs_and_ext4_as_df_shows_them(loop_device, mounted, filesystem, mkfs):
    require_tools(mkfs[0])
    device = loop_device("fs", GiB).device
    _run(*mkfs, device)
    size, available = _df(mounted(device, "fs"))
    model = ext4_space(GiB) if filesystem == "ext4" else xfs_space(GiB, *((64 * 1024, 256 * 1024) if "striped" in
                                                                         filesystem else (0, 0)))
    _near(available, model.available, f"{filesystem} on a 1 GiB loop device, df available", rel=0)
    assert model.size == size


def _fill(folder: Path) -> int:
    """Bytes of files written until the filesystem says ENOSPC: 64 MiB files, then 8 MiB, then
    1 MiB ones to take the tail; a file cut short by ENOSPC is removed and not counted."""
    written, number = 0, 0
    for size in (64 * MiB, 8 * MiB, MiB):
        block = os.urandom(size)
        while True:
            path = folder / f"fill-{number}"
            number += 1
            try:
                with open(path, "wb") as handle:
                    handle.write(block)
                    handle.flush()
                    os.fsync(handle.fileno())
            except OSError as error:
                if error.errno != errno.ENOSPC:
                    raise
                path.unlink(missing_ok=True)
                os.sync()
                break
            written += size
    return written


def _estimated_free(mounted_at: Path) -> int:
    for line in _run("btrfs", "filesystem", "usage", "-b", str(mounted_at)).splitlines():
        if "Free (estimated):" in line:
            return int(line.split(":", 1)[1].split()[0])
    raise AssertionError("btrfs filesystem usage printed no Free (estimated)")


@pytest.mark.parametrize("count", [2, 3])
def test_btrfs_raid1_as_btrfs_estimates_it_and_as_it_fills(loop_device, mounted, count):
    """Three devices: mkfs puts its chunks on two, and the kernel's 1 GiB-and-under chunks leave
    room on one device that raid1 cannot use; the model allocates chunk by chunk as the kernel does."""
    require_tools("mkfs.btrfs", "btrfs")
    devices = [loop_device(f"b{index}", GiB).device for index in range(count)]
    _run("mkfs.btrfs", "-q", "-f", "-d", "raid1", "-m", "raid1", *devices)
    try:
        point = mounted(devices[0], "btrfs")
        model = usable_capacity(LayoutSpec("btrfs-raid1", (GiB,) * count))
        _near(_estimated_free(point), model.reported, f"btrfs raid1 on {count} x 1 GiB, Free (estimated)", rel=0)
        _near(_fill(point), model.usable, f"btrfs raid1 on {count} x 1 GiB, data written until ENOSPC")
    finally:
        subprocess.run(["umount", str(devices[0])], capture_output=True, timeout=60)
        subprocess.run(["btrfs", "device", "scan", "--forget", *devices], capture_output=True, timeout=60)


def test_minio_erasure_coding_as_it_reports_and_as_it_fills(loop_device, mounted, tmp_path):
    """Four 1 GiB drives, XFS each, MinIO's default EC:2. Its admin API's usable capacity is its
    data drives' totals; PUTs of 4 MiB objects go on until MinIO refuses one (507
    XMinioStorageFull, or 503 SlowDownWrite once a drive's XFS refuses the shard). MinIO checks the
    1% it keeps against drive figures it caches for a second, so it takes a little more than the
    rule says: about 0.3-0.5% here, a second's writes at any size."""
    from s3_fixtures import S3Admin, require_s3_tools

    from backupbench.layouts.minio import MinioServer

    require_s3_tools()
    drives = []
    for index in range(4):
        device = loop_device(f"m{index}", GiB).device
        _run("mkfs.xfs", "-q", "-f", device)
        drives.append(mounted(device, f"d{index}"))
    model = usable_capacity(LayoutSpec("minio-ec", (GiB,) * 4))
    with MinioServer(drives, log_path=tmp_path / "minio.log") as server:
        admin = S3Admin.of(server)
        status, body, _ = admin.exchange("GET", "minio/admin/v3/storageinfo")
        assert status == 200, body
        info = json.loads(body)
        data_drives = info["Backend"]["StandardSCData"][0]
        usable = sum(disk["totalspace"] for disk in info["Disks"] if disk["disk_index"] < data_drives)
        assert data_drives == 2
        _near(usable, model.reported, "minio-ec EC:2 on 4 x 1 GiB (XFS), admin API usable capacity", rel=0)
        admin.create_bucket("fill")
        block, written, status = os.urandom(4 * MiB), 0, 200
        while status == 200:
            status, body = admin.request("PUT", "fill", f"o{written // (4 * MiB)}", body=block)
            written += 4 * MiB if status == 200 else 0
        assert status in (503, 507), body
        _near(written, model.usable, "minio-ec EC:2 on 4 x 1 GiB (XFS), 4 MiB objects PUT until refused")
