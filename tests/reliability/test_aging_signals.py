"""An aging run stopped in the middle (Ctrl-C, SIGTERM; SIGKILL then `backupbench cleanup`) on XFS
with block clone leaves nothing: no backup file, no folder, no open journal, no fio, and the run
stored as interrupted (the signal trials' harness, trials.py)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest
from trials import Workload, run_trial

from backupbench import units
from host_support import require_tools

pytestmark = pytest.mark.real
# About 23 s on the development VM: a stop after 2 s lands in day 0's restores (fio running), after 5
# and 8 s among the days, their jobs and restores.
AGING = Workload("aging", ("--workload", "aging", "--full-size", "64MiB", "--days", "60", "--measure-every", "20",
                           "--block-clone", "--dailies", "7", "--weeklies", "2", "--runtime", "1s", "--ramp", "0"))


@pytest.fixture
def xfs(loop_device, tmp_path: Path) -> Path:
    require_tools("mkfs.xfs", "mount", "umount", "fio")
    loop = loop_device("xfs", 768 * units.MiB)
    subprocess.run(["mkfs.xfs", "-q", "-f", "-m", "reflink=1", loop.device], check=True, capture_output=True)
    mounted = tmp_path / "mnt"
    mounted.mkdir()
    subprocess.run(["mount", loop.device, str(mounted)], check=True, capture_output=True)
    return mounted  # loop_device unmounts it, then detaches


@pytest.mark.parametrize("sig, delay", [(signal.SIGINT, 5.0), (signal.SIGTERM, 2.0), (signal.SIGKILL, 8.0)],
                         ids=["ctrl-c", "sigterm", "sigkill+cleanup"])
def test_a_stopped_aging_run_leaves_nothing(xfs, sig, delay):
    folder = xfs / f"trial-{sig.name}"
    folder.mkdir()
    outcome = run_trial(AGING, sig, delay, folder, after_handlers=True)
    assert not outcome.finished_first, "the run ended before the signal: give it more days"
    assert outcome.problems() == [], outcome.describe()
    assert outcome.leftovers == [] and outcome.status == "interrupted"
