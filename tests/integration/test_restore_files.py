"""`backupbench run --workload restore FILE...`: KB2014's restores of existing backup files,
read-only, with real fio on files the test made: every byte, the size and the mtime of every
file unchanged afterwards, nothing made beside them, each file's extent map measured, and the
refusals (a device, a directory, a file under one block, tmpfs, a file being written) one line each."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest

from host_support import sha256
from backupbench.results.document import phase_figures

pytestmark = pytest.mark.real
QUICK = ("--runtime", "1s", "--ramp", "0", "--quiet")
MiB = 2**20


def _backup_file(path: Path, mib: int = 8) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        for _ in range(mib):
            handle.write(os.urandom(MiB))
        handle.flush()
        os.fsync(handle.fileno())
    return path


def _state(folder: Path) -> dict[str, tuple[str, int, int]]:
    """Every file in the folder: its hash, size and mtime (ns)."""
    return {p.name: (sha256(p), p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def _one_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_a_restore_reads_each_file_and_changes_nothing(cli, tmp_path):
    repo = tmp_path / "repo"
    full, increment = _backup_file(repo / "job.vbk", 16), _backup_file(repo / "job-1.vib", 4)
    before = _state(repo)
    done = cli("run", "--workload", "restore", str(full), str(increment), *QUICK, "--json")
    assert done.returncode == 0, done.stderr
    assert _state(repo) == before  # every byte, size and mtime; and nothing new beside them
    data = json.loads(done.stdout)
    phases = {p["name"]: p for p in data["phases"]}
    assert set(phases) == {f"{f}:{op}" for f in ("job.vbk", "job-1.vib")
                           for op in ("restore-sequential", "restore-random")}
    for name, phase in phases.items():
        figures = phase_figures(phase)
        assert phase["status"] == "complete" and figures["effective_bw"] > 0 and figures["read_bw"] > 0
        assert figures.get("write_bw", 0) == 0
        size = (16 if name.startswith("job.vbk") else 4) * MiB
        assert figures["file_bytes"] == size and figures["file_extents"] >= 1
        assert figures["file_mean_extent_bytes"] > 0 and figures["model_seq_bw"] > figures["model_random_bw"] > 0
        units = {f["name"]: f["unit"] for f in phase["figures"]}
        assert units["file_jumps"] == "jumps" and units["model_seq_bw"] == "B/s"
        assert phase["detail"]["file"] in (str(full), str(increment)) and phase["detail"]["fs_type"]
    # The job files are read-only and plain fio (with --readonly) runs them as they are.
    folder = cli.results / "runs" / data["run"]["id"]
    job = (folder / "job.vbk:restore-random.fio").read_text()
    assert "allow_file_create=0" in job and "unlink" not in job and "rw=randread" in job
    assert "--readonly" in (folder / "commands.txt").read_text()


def test_the_exported_jobs_of_a_restore_only_read_and_plain_fio_leaves_the_file_as_it_was(cli, tmp_path):
    backup = _backup_file(tmp_path / "repo" / "full.vbk")
    before = _state(backup.parent)
    run = json.loads(cli("run", "--workload", "restore", str(backup), *QUICK, "--json").stdout)
    exported = cli("export-fio", "--run", run["run"]["id"])
    assert exported.returncode == 0, exported.stderr
    assert "unlink=" not in exported.stdout and "fio --readonly suite.fio" in exported.stdout
    assert re.findall(r"^filename=(.*)$", exported.stdout, re.M) == [str(backup)] * 2
    suite = tmp_path / "suite.fio"
    suite.write_text(exported.stdout)
    done = subprocess.run(["fio", "--readonly", "--output-format=json", str(suite)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert _state(backup.parent) == before


def test_run_on_a_file_without_the_restore_workload_says_how_to_restore_it(cli, tmp_path):
    backup = _backup_file(tmp_path / "full.vbk", 1)
    done = cli("run", str(backup), *QUICK)
    assert done.returncode == 3  # refused, as a directory that cannot be used is
    line = _one_line(done)
    assert "is a file, not a directory" in line and f"--workload restore {backup}" in line


@pytest.mark.parametrize("case", ["missing", "directory", "one block short", "fio's syntax", "none"])
def test_what_cannot_be_restored_from_is_refused_in_one_line(cli, tmp_path, case):
    folder = tmp_path / "repo"
    folder.mkdir()
    small = folder / "tiny.vib"
    small.write_bytes(b"x" * (512 * 1024 - 1))
    args = {"missing": [str(folder / "gone.vbk")], "directory": [str(folder)], "one block short": [str(small)],
            "fio's syntax": [str(_backup_file(tmp_path / "a;b" / "full.vbk", 1))], "none": []}[case]
    before = _state(folder)
    done = cli("run", "--workload", "restore", *args, *QUICK)
    assert done.returncode in (2, 3), done.stderr
    line = _one_line(done)
    assert {"missing": "does not exist", "directory": "is a directory", "one block short": "smaller than one block",
            "fio's syntax": "cannot be handed to fio", "none": "needs the files"}[case] in line, line
    assert _state(folder) == before
    assert not (cli.results / "runs").exists() or not any((cli.results / "runs").iterdir())  # no run opened


def test_a_device_and_a_file_on_tmpfs_are_refused(cli, tmp_path, loop_device, mount_point):
    loop = loop_device("disk", 16 * MiB)
    memory = mount_point("tmpfs", "size=16m")
    on_tmpfs = _backup_file(memory / "full.vbk", 1)
    before = sha256(loop.backing), sha256(on_tmpfs)
    for path, said in ((loop.device, "is a device"), (str(on_tmpfs), "is on tmpfs")):
        done = cli("run", "--workload", "restore", path, *QUICK)
        assert done.returncode == 3, done.stderr
        assert said in _one_line(done)
    assert (sha256(loop.backing), sha256(on_tmpfs)) == before and [p.name for p in memory.iterdir()] == ["full.vbk"]


def test_a_file_being_written_ends_the_run_with_that_said(cli, tmp_path):
    backup = _backup_file(tmp_path / "repo" / "growing.vbk", 4)
    stop = threading.Event()

    def append() -> None:
        with open(backup, "ab") as handle:
            while not stop.is_set():
                handle.write(os.urandom(64 * 1024))
                handle.flush()
                time.sleep(0.05)

    writer = threading.Thread(target=append)
    writer.start()
    try:
        done = cli("run", "--workload", "restore", str(backup), "--runtime", "2s", "--ramp", "0", "--quiet")
    finally:
        stop.set()
        writer.join()
    assert done.returncode == 3, done.stderr
    assert "is being written" in _one_line(done)
