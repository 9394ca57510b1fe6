"""process.Background's children die with backupbench, even when it is SIGKILLed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from backupbench.process import running

pytestmark = pytest.mark.real


def test_a_background_child_dies_when_backupbench_is_killed(tmp_path):
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is missing")
    pid_file = tmp_path / "child.pid"
    script = (
        "import sys, time\n"
        "from backupbench import process\n"
        "child = process.Background(['sleep', '300'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.proc.pid))\n"
        "time.sleep(300)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        child = int(pid_file.read_text())
        os.kill(child, 0)  # running
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while True:
            try:
                with open(f"/proc/{child}/stat") as handle:
                    state = handle.read().split(") ")[1].split()[0]
            except FileNotFoundError:
                break
            if state == "Z":
                break
            assert time.monotonic() < deadline, "the child outlived its parent"
            time.sleep(0.05)
    finally:
        if parent.poll() is None:
            parent.kill()


def test_running_is_false_for_a_zombie_and_for_a_reaped_process():
    assert running(os.getpid())
    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while running(child.pid):  # until it has exited: a zombie, as nobody has reaped it yet
        assert time.monotonic() < deadline, "true did not end"
        time.sleep(0.01)
    with open(f"/proc/{child.pid}/stat") as handle:
        assert handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    child.wait()
    assert not running(child.pid)
