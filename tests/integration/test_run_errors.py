"""Bad input: one clear line, the right exit code, nothing left behind."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time

import pytest

from backupbench.engines.fio import FioEngine
from backupbench.engines.fio_job import FioJob
from backupbench.errors import ProcessError
from host_support import start_cli

pytestmark = pytest.mark.real
QUICK = ["--size", "32MiB", "--runtime", "1s", "--ramp", "0"]


def one_line_error(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_missing_path(cli, tmp_path):
    result = cli("run", str(tmp_path / "nope"), *QUICK)
    assert result.returncode == 3
    assert "does not exist" in one_line_error(result)
    assert not (tmp_path / "nope").exists()


def test_not_a_directory(cli, tmp_path):
    file = tmp_path / "file"
    file.write_text("x")
    result = cli("run", str(file), *QUICK)
    assert result.returncode == 3 and "not a directory" in one_line_error(result)
    assert file.read_text() == "x"


def test_read_only_filesystem(cli, mount_point):
    ro = mount_point("tmpfs", "ro,size=64m")
    result = cli("run", str(ro), *QUICK)
    assert result.returncode == 3 and "read-only" in one_line_error(result)


def test_not_enough_space(cli, mount_point):
    small = mount_point("tmpfs", "size=16m")
    result = cli("run", str(small), "--size", "64MiB", "--runtime", "1s", "--ramp", "0")
    line = one_line_error(result)
    assert result.returncode == 3 and "not enough free space" in line and "--size" in line
    assert list(small.iterdir()) == []


def test_small_files_without_space_name_their_own_options(cli, mount_point):
    small = mount_point("tmpfs", "size=8m")
    line = one_line_error(cli("run", str(small), "--workload", "smallfiles", "--files", "1000"))
    assert "not enough free space" in line and "--files" in line and "--size" not in line
    assert list(small.iterdir()) == []


@pytest.mark.parametrize("args, expected", [
    (("run", "--block-size", "0"), "--block-size: must be a multiple of 4 KiB"),
    (("run", "--operations", "active-full,active-full"), "--operations: active-full is listed twice"),
    (("run", "--size", "99999999999PiB"), "--size: 112,589,990,683,136,500,093,157,376 bytes is more than any tool"),
    (("history", "--limit", "99999999999999999999"), "Invalid value for '--limit'"),
    (("run", "--no-such-flag"), "No such option '--no-such-flag'"),
])
def test_values_no_tool_takes_are_one_line_and_exit_2(cli, args, expected):
    result = cli(*args)
    assert result.returncode == 2 and expected in one_line_error(result)


def test_a_results_path_that_is_a_file_is_one_line(cli, tmp_path):
    file = tmp_path / "results-file"
    file.write_text("mine")
    result = cli("history", "--results", str(file))
    assert result.returncode == 2 and "is a file, not a directory" in one_line_error(result)
    assert file.read_text() == "mine"


def test_few_files_without_folders_given_get_a_folder_each(cli, tmp_path):
    result = cli("run", str(tmp_path), "--workload", "smallfiles", "--files", "10", "--json", "--quiet")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["run"]["settings"]["folders"] == 10


def test_bad_option_value(cli, tmp_path):
    result = cli("run", str(tmp_path), "--size", "lots")
    assert result.returncode == 2
    assert one_line_error(result).startswith("backupbench: --size: not a size")


def test_debug_shows_the_traceback(cli, tmp_path):
    result = cli("run", str(tmp_path / "nope"), "--debug")
    assert "Traceback" in result.stderr and "does not exist" in result.stderr


def test_fio_not_installed(cli, tmp_path):
    no_fio = tmp_path / "bin"
    no_fio.mkdir()
    result = cli("run", *QUICK, env={"PATH": str(no_fio)})
    assert result.returncode == 4
    line = one_line_error(result)
    assert "fio is not installed" in line and "apt-get install fio" in line
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("bb-scratch")] == []


def test_fio_failure_shows_its_stderr(tmp_path):
    job = FioJob(name="broken", filename=tmp_path / "t.dat", rw="write", block_size=4096,
                 region_size=65536, ioengine="no-such-engine")
    with pytest.raises(ProcessError) as raised:
        FioEngine().run(job, tmp_path)
    assert "no-such-engine" in raised.value.stderr
    assert raised.value.message.startswith("fio failed:")


def test_fio_failing_mid_suite_is_reported_and_cleaned_up(cli, tmp_path):
    # A real fio that refuses the restore jobs: a wrapper adding an option fio rejects
    # for reads. The layout and active-full succeed, so the run fails part-way.
    wrapper_dir = tmp_path / "bin"
    wrapper_dir.mkdir()
    wrapper = wrapper_dir / "fio"
    wrapper.write_text('#!/bin/sh\ncase "$*" in *restore-sequential*) exec /usr/bin/fio --bogus-option "$@";; esac\n'
                       'exec /usr/bin/fio "$@"\n')
    wrapper.chmod(0o755)
    repo = tmp_path / "repo"
    repo.mkdir()
    result = cli("run", str(repo), *QUICK, env={"PATH": f"{wrapper_dir}:{os.environ['PATH']}"})
    assert result.returncode == 1
    line = [said for said in result.stderr.splitlines() if said.startswith("backupbench:")]
    assert line and "fio failed" in line[0] and "bogus-option" in line[0]
    assert list(repo.iterdir()) == []
    with sqlite3.connect(cli.results / "results.db") as db:
        status, error = db.execute("SELECT status, error FROM runs").fetchone()
        ops = dict(db.execute("SELECT name, status FROM operations").fetchall())
    assert status == "failed" and "fio failed" in error
    assert ops["active-full"] == "complete" and ops["restore-sequential"] == "failed"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_interrupt_stops_fio_removes_file_keeps_partial_run(tmp_path, sig):
    repo = tmp_path / "repo"
    repo.mkdir()
    results = tmp_path / "results"
    proc = start_cli(["run", str(repo), "--size", "32MiB", "--runtime", "30s", "--quiet"], results=results)
    try:
        deadline = time.monotonic() + 60
        while not list(results.glob("runs/*/active-full.fio")):
            assert time.monotonic() < deadline, "active-full never started"
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        time.sleep(1.0)
        fio_pids = subprocess.run(["pgrep", "-f", str(repo)], capture_output=True, text=True).stdout.split()
        assert fio_pids, "fio should be running against the repo"
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert list(repo.iterdir()) == []
    still = subprocess.run(["pgrep", "-f", str(repo)], capture_output=True, text=True).stdout.split()
    assert still == []
    with sqlite3.connect(results / "results.db") as db:
        assert db.execute("SELECT status FROM runs").fetchone() == ("interrupted",)
        assert db.execute("SELECT status FROM operations WHERE name='active-full'").fetchone() == ("interrupted",)
    run_dirs = list((results / "runs").iterdir())
    assert json.loads((run_dirs[0] / "result.json").read_text())["status"] == "interrupted"
