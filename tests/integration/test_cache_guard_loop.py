"""The cache guard for real: ext4 on a loop device the test made, a restore read with fio.

Without direct I/O the loop device reads its backing file through the host's page cache: the
file the layout phase just wrote is served from memory and the disk under it sees next to
nothing; the phase is marked `cached`, and a caution says so before the run. With
`losetup --direct-io=on` the same read reaches the disk and nothing is marked. Root only; the
loop devices and mounts are the test's own and are removed, also on failure."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import pytest

from host_support import require_root_tool

from backupbench.results.document import phase_figures

# alone: the guard reads the disk under the loop's backing file, which every other test's I/O
# moves too (with four root workers a read the page cache served was seen as the disk's).
pytestmark = [pytest.mark.real, pytest.mark.root, pytest.mark.alone]


def _ext4_on_loop(loop_device, tmp_path: Path, name: str, direct_io: bool) -> tuple[str, Path]:
    require_root_tool("mkfs.ext4", "mount", "losetup")
    loop = loop_device(name, 256 * 2**20)
    if direct_io:
        subprocess.run(["losetup", "--direct-io=on", loop.device], check=True, capture_output=True, timeout=30)
        assert Path(f"/sys/block/{loop.name}/loop/dio").read_text().strip() == "1"
    subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", loop.device],
                   check=True, capture_output=True, timeout=120)
    mnt = tmp_path / name
    mnt.mkdir()
    subprocess.run(["mount", loop.device, str(mnt)], check=True, capture_output=True, timeout=60)
    return loop.name, mnt


def _restore(cli, mnt: Path) -> tuple[dict, str]:
    # 4 s after the ramp: a phase of fewer whole seconds counts its partial ones too (sampler.py).
    result = cli("run", str(mnt), "--size", "64MiB", "--runtime", "4s", "--ramp", "1s",
                 "--operations", "restore-sequential", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def test_a_read_served_by_the_page_cache_behind_a_loop_device_is_marked_cached(cli, tmp_path, loop_device):
    name, mnt = _ext4_on_loop(loop_device, tmp_path, "cached", direct_io=False)
    data, progress = _restore(cli, mnt)
    phase = data["phases"][0]
    reason = phase["detail"]["cached"]
    assert "served by the host's page cache of" in reason and f"the file behind {name} (no direct I/O)" in reason
    assert phase_figures(phase)["storage_bytes_pct"] < 50
    assert any(note.startswith("restore-sequential: cached: ") for note in data["run"]["notes"])
    assert phase["cached"] is True and phase["cached_reason"] == reason
    # The caution came before the run, with the fix (wrapped at 80 columns where the path is long,
    # as under pytest-xdist's per-worker folders).
    flat = " ".join(progress.split())
    assert "caution:" in flat and "losetup --direct-io=on" in flat
    assert progress.index("caution:") < progress.index("restore-sequential")
    assert any(f"the file behind {name}: reads may come from memory" in note for note in data["run"]["notes"])


def test_the_same_read_through_a_loop_device_with_direct_io_is_not(cli, tmp_path, loop_device):
    _, mnt = _ext4_on_loop(loop_device, tmp_path, "direct", direct_io=True)
    data, progress = _restore(cli, mnt)
    phase = data["phases"][0]
    assert "cached" not in phase["detail"] and phase["cached"] is False
    assert phase_figures(phase)["storage_bytes_pct"] >= 50
    assert "caution:" not in progress
    # The monitor left out the phase's first seconds (its ramp among them) and its last.
    assert phase["detail"]["monitor"]["left_out"] >= 2 and phase["detail"]["ramp_s"] == 1.0


def test_a_cached_read_measured_twice_is_noted_once_and_flagged_in_every_output(cli, tmp_path, loop_device):
    _, mnt = _ext4_on_loop(loop_device, tmp_path, "twice", direct_io=False)
    result = cli("run", str(mnt), "--size", "64MiB", "--runtime", "1s", "--ramp", "0",
                 "--operations", "restore-sequential", "--repeat", "2", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    phase = data["phases"][0]
    # Each sample is judged on its own; the phase is flagged when any was cached, and the
    # note, said once, counts them (both samples are, as a rule: the layout phase's file is in memory).
    cached = phase["detail"]["cached_samples"]
    assert phase["cached"] is True and phase["detail"]["cache_checked_samples"] == 2 and cached >= 1
    cached_notes = [note for note in data["run"]["notes"] if ": cached" in note]
    assert len(cached_notes) == 1, data["run"]["notes"]
    assert cached_notes[0].startswith(f"restore-sequential: cached in {cached} of 2 samples: ")
    shown = cli("show", data["run"]["id"])
    assert shown.returncode == 0, shown.stderr
    # The phase's row is the operations table's first: its name may be cut ("restore-…") and its
    # flags cell may hold "unstable" too on a loaded machine, so the cell is read, not the line.
    lines = shown.stdout.splitlines()
    body = next(index for index, line in enumerate(lines) if line.startswith("┡"))
    flags = lines[body + 1].rstrip().rstrip("│").split("│")[-1]
    assert "cached" in flags and "flags" in shown.stdout, shown.stdout
    exported = cli("show", data["run"]["id"], "--csv")
    assert exported.returncode == 0, exported.stderr
    rows = list(csv.DictReader(io.StringIO(exported.stdout)))
    assert rows and all(row["cached"] == "yes" for row in rows if row["phase"] == "restore-sequential")
