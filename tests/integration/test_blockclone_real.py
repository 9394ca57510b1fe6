"""`backupbench run --workload block-clone` for real: XFS (reflink=1) and btrfs on loop devices
the test made, refusals on filesystems that cannot clone, and the clone engine against filefrag."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from backupbench import units
from backupbench.engines import clone
from backupbench.results.document import phase_figures
from host_support import require_tools, start_cli

pytestmark = pytest.mark.real
FULL = 64 * units.MiB
QUICK = ["--workload", "block-clone", "--full-size", "64MiB", "--increments", "3", "--change-rate", "5%",
         "--restore-runtime", "1s", "--no-monitor"]
# fs type -> mkfs command (the device is appended)
MKFS = {
    "xfs": ["mkfs.xfs", "-q", "-f", "-m", "reflink=1"],
    "xfs-noreflink": ["mkfs.xfs", "-q", "-f", "-m", "reflink=0"],
    "btrfs": ["mkfs.btrfs", "-q", "-f"],
    "ext4": ["mkfs.ext4", "-q", "-F"],
}


@pytest.fixture
def filesystem(loop_device, tmp_path: Path):
    """filesystem(kind) -> a fresh filesystem of that kind, mounted under tmp_path."""
    def make(kind: str) -> Path:
        require_tools(MKFS[kind][0], "mount", "umount")
        loop = loop_device(kind, 512 * units.MiB)
        subprocess.run([*MKFS[kind], loop.device], check=True, capture_output=True)
        target = tmp_path / f"mnt-{kind}"
        target.mkdir()
        subprocess.run(["mount", loop.device, str(target)], check=True, capture_output=True)
        return target
    return make  # loop_device unmounts everything under tmp_path, then detaches


def ours(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(("backupbench-", ".backupbench")))


def filefrag_shared(path: Path) -> tuple[int, int]:
    """(extents, extents flagged shared) as `filefrag -v` prints them."""
    text = subprocess.run(["filefrag", "-v", str(path)], check=True, capture_output=True, text=True).stdout
    rows = [line for line in text.splitlines() if re.match(r"\s*\d+:\s+\d+\.\.", line)]
    return len(rows), sum("shared" in row for row in rows)


@pytest.mark.parametrize("kind", ["xfs", "btrfs"])
def test_synthetic_fulls_share_extents_and_cost_only_the_changes(cli, filesystem, kind):
    repo = filesystem(kind)
    result = cli("run", str(repo), *QUICK, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["run"]["status"] == "complete" and data["run"]["kind"] == "block-clone"
    ops = {op["name"]: {"figures": phase_figures(op), "units": {f["name"]: f["unit"] for f in op["figures"]}}
           for op in data["phases"]}
    assert list(ops) == ["full", "increment-1", "increment-2", "increment-3", "restore-sequential-original",
                         "restore-sequential", "restore-random-original", "restore-random"]
    assert ops["full"]["figures"]["write_bw"] > 0 and ops["full"]["figures"]["extents"] <= 4
    change = data["run"]["settings"]["change_bytes"]
    assert change == 6 * 512 * units.KiB  # 5 % of 128 blocks
    extents = []
    for name in ("increment-1", "increment-2", "increment-3"):
        f = ops[name]["figures"]
        assert f["clone_s"] > 0 and f["clone_s_per_tib"] == pytest.approx(f["clone_s"] * units.TiB / FULL)
        assert f["change_bytes"] == change and f["write_bw"] > 0
        # The synthetic full holds only its changed blocks itself; the rest it shares.
        assert f["unique_bytes"] == change and f["shared_bytes"] == FULL - change
        # The filesystem grew by about the changed data, not by the logical size.
        assert 0.8 * change <= f["fs_used_delta"] <= 2 * change < FULL / 4, f["fs_used_delta"]
        assert ops[name]["units"]["clone_s_per_tib"] == "s/TiB"  # stored as the figure's unit
        extents.append(f["extents"])
    assert extents[0] > 2 and extents[-1] >= extents[0]  # fragmentation builds up
    for base in ("restore-sequential", "restore-random"):
        original, synthetic = ops[f"{base}-original"]["figures"], ops[base]["figures"]
        assert original["read_bw"] > 0 and synthetic["read_bw"] > 0 and original["extents"] <= 4
        assert synthetic["extents"] == extents[-1]
        assert synthetic["fragmentation_cost"] == pytest.approx(original["read_bw"] / synthetic["read_bw"])
    assert ours(repo) == []
    run_dir = cli.results / "runs" / data["run"]["id"]
    assert "randrepeat=0" in (run_dir / "increment-2.fio").read_text()
    assert "fio --output-format=json" in (run_dir / "commands.txt").read_text()


@pytest.mark.parametrize("kind", ["xfs", "btrfs"])
def test_clone_engine_agrees_with_filefrag(filesystem, kind):
    require_tools("filefrag")
    repo = filesystem(kind)
    source, copy = repo / "source.dat", repo / "copy.dat"
    source.write_bytes(os.urandom(8 * units.MiB))
    result = clone.clone_file(source, copy, per_call=units.MiB)
    assert result.calls == 8 and result.bytes == 8 * units.MiB and result.seconds > 0
    assert copy.read_bytes() == source.read_bytes()
    with open(copy, "r+b") as handle:  # one changed block: it alone stops being shared
        handle.seek(3 * units.MiB)
        handle.write(os.urandom(64 * 1024))
        handle.flush()
        os.fsync(handle.fileno())
    mine = clone.summarize(clone.file_extents(copy))
    records, shared = filefrag_shared(copy)
    assert mine.shared_extents == shared >= 1 and mine.records == records
    assert mine.unique_bytes == 64 * 1024 and mine.shared_bytes == 8 * units.MiB - 64 * 1024


@pytest.mark.parametrize("kind", ["ext4", "xfs-noreflink"])
def test_filesystems_without_reflink_are_refused_before_anything_is_written(cli, filesystem, kind):
    repo = filesystem(kind)
    before = sorted(os.listdir(repo))
    result = cli("run", str(repo), *QUICK)
    assert result.returncode == 3, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot hold block clones" in lines[0] and "Operation not supported" in lines[0]
    assert ("ext4" if kind == "ext4" else "xfs") in lines[0] and "Traceback" not in result.stderr
    assert sorted(os.listdir(repo)) == before
    runs = cli.results / "runs"
    assert not runs.exists() or not list(runs.iterdir())


def test_interrupt_removes_every_clone(filesystem, tmp_path):
    repo = filesystem("xfs")
    results = tmp_path / "results"
    proc = start_cli(["run", str(repo), "--workload", "block-clone", "--full-size", "64MiB", "--increments", "60",
                      "--restore-runtime", "1s", "--quiet"], results=results)
    try:
        deadline = time.monotonic() + 120
        while not list(repo.glob("backupbench-*/synthetic-3.dat")):
            assert time.monotonic() < deadline, "increment 3 never started"
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert ours(repo) == []
    with sqlite3.connect(results / "results.db") as db:
        assert db.execute("SELECT status FROM runs").fetchone() == ("interrupted",)
