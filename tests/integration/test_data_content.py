"""What the bytes written are (issue 14), for real: the fio job backupbench runs writes data
that compresses (zlib) as asked, within 5%; on btrfs mounted compress=zstd a constant pattern
takes almost no space where incompressible data takes all of it, and a run with the pattern is
told so."""

from __future__ import annotations

import json
import os
import subprocess
import zlib
from pathlib import Path

import pytest

from backupbench.engines.content import DataContent
from backupbench.engines.fio_job import FioJob

pytestmark = pytest.mark.real
MiB = 2**20


def _fio_writes(folder: Path, content: DataContent, size: int = 32 * MiB, block: int = 512 * 1024) -> bytes:
    target = folder / f"{content.kind}-{content.compress}-{content.dedupe}.dat"
    job = FioJob(name="w", filename=target, rw="write", block_size=block, region_size=size, content=content,
                 direct=False)
    job_file = job.write(folder / "w.fio")
    subprocess.run(["fio", "--output-format=terse", str(job_file)], check=True, capture_output=True)
    data = target.read_bytes()
    target.unlink()
    return data


@pytest.mark.parametrize("content, ratio", [
    (DataContent(), 1.0),
    (DataContent("compressible", compress=50), 0.5),
    (DataContent("compressible", compress=80), 0.2),
    (DataContent("pattern", pattern=0xAA), 0.0),
])
def test_fio_writes_data_that_compresses_as_asked(tmp_path, content, ratio):
    data = _fio_writes(tmp_path, content)
    assert abs(len(zlib.compress(data)) / len(data) - ratio) <= 0.05, content.label


def test_fio_dedupe_percentage_repeats_blocks(tmp_path):
    # 1,024 blocks: the share of repeats is 30% +- 1.4% (one standard deviation)
    data = _fio_writes(tmp_path, DataContent("compressible", dedupe=30), size=64 * MiB, block=64 * 1024)
    blocks = [data[i:i + 64 * 1024] for i in range(0, len(data), 64 * 1024)]
    assert abs(1 - len(set(blocks)) / len(blocks) - 0.30) <= 0.05


def _used(path: Path) -> int:
    os.sync()
    stats = os.statvfs(path)
    return (stats.f_blocks - stats.f_bfree) * stats.f_frsize


def test_btrfs_with_zstd_stores_a_pattern_in_almost_nothing_and_says_so(cli, tmp_path, loop_device):
    loop = loop_device("btrfs", 512 * MiB)
    subprocess.run(["mkfs.btrfs", "-f", "-q", loop.device], check=True, capture_output=True)
    mount = tmp_path / "mnt"
    mount.mkdir()
    subprocess.run(["mount", "-o", "compress=zstd", loop.device, str(mount)], check=True)
    try:
        grown = {}
        for content in (DataContent(), DataContent("pattern")):
            before = _used(mount)
            folder = mount / content.kind
            folder.mkdir()
            target = folder / "f.dat"
            # Buffered and not preallocated: btrfs stores O_DIRECT writes and writes into
            # preallocated extents (fio's default fallocate) uncompressed.
            job = FioJob(name="w", filename=target, rw="write", block_size=MiB, region_size=64 * MiB,
                         content=content, direct=False, fallocate="none")
            subprocess.run(["fio", "--output-format=terse", str(job.write(tmp_path / "w.fio"))], check=True,
                           capture_output=True)
            grown[content.kind] = _used(mount) - before
        assert grown["incompressible"] > 56 * MiB
        assert grown["pattern"] < grown["incompressible"] / 8

        pattern_run = cli("run", str(mount), "--workload", "first-write", "--size", "16MiB", "--data", "pattern",
                          "--buffered", "--json")
        assert pattern_run.returncode == 0, pattern_run.stderr
        notes = json.loads(pattern_run.stdout)["run"]["notes"]
        assert any("btrfs compress=zstd" in n and "may measure compression" in n for n in notes), notes
        plain_run = cli("run", str(mount), "--workload", "first-write", "--size", "16MiB", "--json")
        assert not any("may measure compression" in n for n in json.loads(plain_run.stdout)["run"]["notes"])
        direct_run = cli("run", str(mount), "--workload", "first-write", "--size", "16MiB", "--data", "pattern",
                         "--json")  # O_DIRECT: stored uncompressed on btrfs, so nothing to say
        assert not any("may measure compression" in n for n in json.loads(direct_run.stdout)["run"]["notes"])
        settings = json.loads(plain_run.stdout)["run"]["settings"]
        assert settings["data"] == "incompressible"
        shown = cli("show", json.loads(plain_run.stdout)["run"]["id"])
        assert "data: incompressible" in " ".join(shown.stdout.split())  # the caption, however it wraps
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)
