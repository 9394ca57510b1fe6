"""A run beside other work is said to be disturbed (issue 42): a real run with a process burning
a core next to it has its phases flagged, in every output, and its headline says the figures are
not fit for decisions; the same run on the quiet machine is not flagged (these tests read the
whole machine's CPU, so they run alone: `make test`'s third session)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from backupbench.monitor.options import IGNORE_OTHERS_ENV

pytestmark = [pytest.mark.real, pytest.mark.alone]
RUN = ("--size", "16MiB", "--runtime", "3s", "--ramp", "0", "--operations", "active-full,restore-random", "--json",
       "--quiet")
BURN = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end:\n    pass\n"


def _run(cli, repo, *more: str) -> dict:
    done = cli("run", str(repo), *RUN, *more, unset=(IGNORE_OTHERS_ENV,))   # the suite sets it (conftest.py)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_run_beside_a_busy_process_is_disturbed_and_says_so(cli, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    burner = subprocess.Popen([sys.executable, "-c", BURN])
    try:
        data = _run(cli, repo)
    finally:
        burner.kill()
        burner.wait()
    assert all(phase["disturbed"] for phase in data["phases"]), [p["disturbed"] for p in data["phases"]]
    reason = data["phases"][0]["disturbed_reason"]
    assert "other processes took" in reason and "python" in reason
    figures = {f["name"]: f["value"] for f in data["phases"][0]["figures"]}
    assert figures["others_cpu_cores"] > 0.5
    assert any("not fit for decisions" in note for note in data["run"]["notes"])
    shown = cli("show", data["run"]["id"])
    assert "disturbed" in shown.stdout and "not fit for decisions" in shown.stdout


def test_the_same_run_on_the_quiet_machine_is_not_disturbed(cli, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    data = _run(cli, repo)
    assert [phase["disturbed"] for phase in data["phases"]] == [False, False], [
        phase.get("disturbed_reason") for phase in data["phases"]]


def test_ignore_others_turns_the_watch_off_beside_a_busy_process(cli, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    burner = subprocess.Popen([sys.executable, "-c", BURN])
    try:
        data = _run(cli, repo, "--ignore-others")
    finally:
        burner.kill()
        burner.wait()
    assert [phase["disturbed"] for phase in data["phases"]] == [False, False]
    assert all("others_cpu_cores" not in {f["name"] for f in phase["figures"]} for phase in data["phases"])
