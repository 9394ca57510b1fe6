"""Stop signals at random moments (seeded) into real kb2014, smallfiles and s3 runs, and a
SIGKILL followed by `backupbench cleanup`: nothing may be left and the store must agree.

Each test first runs the workload uninterrupted (it must leave nothing either) to learn
how long it takes; signals then land at seeded random moments inside that window, counted
from the moment backupbench's handlers are in place (before it the Python interpreter is still
starting, and Python's own handling applies: README, "Guarantees"). Set BACKUPBENCH_TRIAL_SEED to replay other
moments; BACKUPBENCH_TRIALS for more trials per case than the suite's 2 (each costs a run's worth
of seconds; bench/signal_trials.py runs 20 per case by default).
"""

from __future__ import annotations

import os
import random
import signal

import pytest
from s3_fixtures import S3Admin
from trials import run_trial, uninterrupted_seconds, workloads

pytestmark = pytest.mark.real

SEED = int(os.environ.get("BACKUPBENCH_TRIAL_SEED", "20261123"))
TRIALS = int(os.environ.get("BACKUPBENCH_TRIALS", "2"))
EARLIEST_S = 0.0


def _moments(name: str, sig: signal.Signals, window: float, count: int) -> list[float]:
    rng = random.Random(f"{SEED}/{name}/{sig.name}")
    return [rng.uniform(EARLIEST_S, max(EARLIEST_S + 0.05, 0.9 * window)) for _ in range(count)]


def _check(outcomes) -> None:
    trials = [o for o in outcomes if not o.finished_first]
    assert trials, "every run finished before its signal: the window is wrong"
    bad = [o.describe() for o in trials if o.problems()]
    assert not bad, f"seed {SEED}: " + " | ".join(bad)


@pytest.fixture(scope="module")
def s3_env(minio_single):
    return {"AWS_ACCESS_KEY_ID": minio_single.access_key, "AWS_SECRET_ACCESS_KEY": minio_single.secret_key}


def _trials(name, sig, tmp_path, env=None, endpoint=None, admin=None, count=TRIALS):
    workload = workloads(endpoint)[name]
    bucket = f"bb-base-{name}" if name == "s3" else None
    window = uninterrupted_seconds(workload, tmp_path / "base", env, bucket)
    if admin is not None:
        assert not admin.bucket_exists(bucket), "the uninterrupted run left its bucket"
    assert not any((tmp_path / "base" / "target").iterdir()), "the uninterrupted run left files"
    outcomes = []
    for index, delay in enumerate(_moments(name, sig, window, count)):
        folder = tmp_path / f"t{index}"
        folder.mkdir()
        trial_bucket = f"bb-{name}-{sig.name.lower()}-{index}" if name == "s3" else None
        outcomes.append(run_trial(workload, sig, delay, folder, env, trial_bucket, admin, after_handlers=True))
    return outcomes


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("name", ["kb2014", "smallfiles"])
def test_a_stop_signal_at_any_moment_leaves_nothing_and_stores_interrupted(name, sig, tmp_path):
    _check(_trials(name, sig, tmp_path))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_signal_into_an_s3_run_leaves_no_object_and_no_bucket(sig, tmp_path, minio_single, s3_env):
    _check(_trials("s3", sig, tmp_path, s3_env, minio_single.endpoint, S3Admin.of(minio_single)))


# From the moment the handlers are in place through the imports that follow (about half a second
# on these machines; more on a loaded one), every 25 ms: the window the README's promise starts at.
BOUNDARY_DELAYS_S = [step * 0.025 for step in range(24)]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_from_the_moment_the_handlers_are_in_place_is_one_line_and_130(sig, tmp_path):
    workload = workloads()["kb2014"]
    outcomes = []
    for index, delay in enumerate(BOUNDARY_DELAYS_S):
        folder = tmp_path / f"b{index}"
        folder.mkdir()
        outcomes.append(run_trial(workload, sig, delay, folder, after_handlers=True))
    _check(outcomes)
    for outcome in (o for o in outcomes if not o.finished_first):
        assert outcome.stderr_tail.count("\n") == 0 and "interrupted" in outcome.stderr_tail, outcome.describe()


@pytest.mark.parametrize("name", ["kb2014", "smallfiles"])
def test_sigkill_then_cleanup_leaves_nothing(name, tmp_path):
    _check(_trials(name, signal.SIGKILL, tmp_path, count=2))


def test_sigkill_into_an_s3_run_then_cleanup_deletes_its_objects_and_bucket(tmp_path, minio_single, s3_env):
    _check(_trials("s3", signal.SIGKILL, tmp_path, s3_env, minio_single.endpoint, S3Admin.of(minio_single),
                   count=2))


def test_sigkill_during_apply_then_cleanup_unmounts_wipes_and_removes_the_mount_folder(tmp_path, loop_device):
    """A layout on a loop device the test made: killed mid-workload, the mount, the filesystem,
    the test file and the run's folder of mount points stay; cleanup removes exactly those."""
    import subprocess
    import time

    from host_support import require_tools, run_cli, start_cli
    require_tools("mkfs.ext4", "wipefs", "fio")
    device = loop_device("disk", 128 * 2**20).device
    root = tmp_path / "mnt"
    results = tmp_path / "results"
    try:
        recipe = tmp_path / "killed.toml"
        recipe.write_text(f'name = "killed"\ndevices = ["{device}"]\n[[layout]]\nname = "plain"\nkind = "filesystem"\n'
                          f'devices = ["{device}"]\nfilesystem = {{ type = "ext4" }}\n[[workload]]\nkind = "kb2014"\n'
                          'size = "32MiB"\nruntime = "20s"\noperations = ["active-full"]\n')
        proc = start_cli(["apply", str(recipe), "--yes", "--quiet", "--mount-root", str(root), "--results", str(results)],
                         stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not list(results.glob("runs/*/plain/active-full.fio")):
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the workload never started"
            time.sleep(0.1)
        time.sleep(1.0)
        proc.kill()
        proc.wait(timeout=30)
        mounted = subprocess.run(["findmnt", "-n", "-S", device], capture_output=True, text=True).stdout
        assert str(root) in mounted  # what the crash left: this is what cleanup is for
        cleanup = run_cli(["cleanup", "--results", str(results)])
        assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
        assert "stored as interrupted" in cleanup.stdout
        assert subprocess.run(["findmnt", "-n", "-S", device], capture_output=True).returncode != 0
        assert subprocess.run(["blkid", "-p", device], capture_output=True).returncode == 2  # wiped
        assert list(root.iterdir()) == []  # mount point and the run's folder removed
        assert not list((results / "journal").glob("*.open.jsonl"))
        history = run_cli(["history", "--json", "--results", str(results)])
        assert '"status": "interrupted"' in history.stdout
    finally:
        subprocess.run(["umount", "-R", str(root)], capture_output=True)
