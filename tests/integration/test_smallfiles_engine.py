"""The small-file engine on real files the test made: in tmp_path, and on tmpfs mounts
sized to refuse or to fill up. Behaviour only; no timing is asserted."""

from __future__ import annotations

import errno
import os
import zlib
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from host_support import require_root_tool

from backupbench import process
from backupbench.engines.smallfiles import PhaseResult, SmallFilesEngine
from backupbench.errors import EngineError, InputError, Interrupted, RefusedError
from backupbench.workloads.smallfiles import PHASES, SmallFilesSpec

KIB = 1024
SMALL = SmallFilesSpec(files=200, file_size="8KiB", folders=7, threads=2, verify=True, data="pattern")


def tagged(parent: Path, run_id: str = "t1") -> Path:
    return parent / f"backupbench-smallfiles-{run_id}"


def file_path(root: Path, spec: SmallFilesSpec, i: int) -> Path:
    """Where file i must be, computed here and not by the engine."""
    return root / f"d{i % spec.folders:04d}" / f"f{i:06d}"


def child_pids() -> set[int]:
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            pids.update(int(p) for p in (task / "children").read_text().split())
        except OSError:  # a thread that ended since the listing
            continue
    return pids


class Recorder:
    """An on_phase callback that records calls and can act at a given phase and point."""

    def __init__(self, action=None, at: str | None = None, when: str = "start"):
        self.calls: list[tuple[str, float, str]] = []
        self.action, self.at, self.when = action, at, when
        self.fired = False

    def __call__(self, phase: str, fraction: float, detail: str) -> None:
        self.calls.append((phase, fraction, detail))
        due = (self.when == "start" and fraction == 0.0) or (self.when == "running" and 0.0 < fraction < 1.0)
        if self.action and phase == self.at and due and not self.fired:
            self.fired = True
            self.action()


def engine() -> SmallFilesEngine:
    return SmallFilesEngine(poll_seconds=0.01, stop_grace_seconds=1.0)


def test_create_update_verify_and_the_files_it_leaves(tmp_path):
    results = engine().run(SMALL.job(), tmp_path, "t1", Recorder(), keep=True)
    root = tagged(tmp_path)

    folders = sorted(p.name for p in root.iterdir())
    assert folders == [f"d{d:04d}" for d in range(7)]
    per_folder = Counter(p.parent.name for p in root.glob("d*/f*"))
    assert sum(per_folder.values()) == 200 and set(per_folder.values()) == {28, 29}
    for i in range(200):
        path = file_path(root, SMALL, i)
        data = path.read_bytes()
        assert data == b"\xaa" * 8 * KIB, path  # the last pattern, whole file

    assert [r.name for r in results] == list(PHASES)
    for result in results:
        assert isinstance(result, PhaseResult)
        assert result.complete and result.files == 200 and result.bytes == 200 * 8 * KIB
        assert result.seconds > 0 and result.files_per_s > 0 and result.mib_per_s > 0
        assert result.files_per_s == pytest.approx(result.files / result.seconds)
        assert result.mib_per_s == pytest.approx(result.bytes / result.seconds / 2**20)
        assert 0 < result.latency_p50_ns <= result.latency_p99_ns
        assert result.flush == "sync-end"
        assert result.mismatches == (0 if result.name == "verify" else None)
        assert 0 <= result.sync_seconds <= result.seconds
    assert results[-1].sync_seconds == 0  # nothing to flush after reading


def test_folder_is_removed_and_nothing_else_touched(tmp_path):
    neighbour = tmp_path / "backupbench-smallfiles-other"
    neighbour.mkdir()
    (tmp_path / "keep.txt").write_text("mine")
    engine().run(SMALL.job(), tmp_path, "t1", Recorder())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backupbench-smallfiles-other", "keep.txt"]
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_progress_calls_use_phase_names_in_order(tmp_path):
    recorder = Recorder()
    engine().run(SMALL.job(), tmp_path, "t1", recorder)
    seen = list(dict.fromkeys(phase for phase, _, _ in recorder.calls))
    assert seen == list(PHASES)
    for phase in PHASES:
        fractions = [f for p, f, _ in recorder.calls if p == phase]
        assert fractions[0] == 0.0 and fractions[-1] == 1.0
        assert fractions == sorted(fractions) and fractions.count(1.0) == 1
        final = [d for p, f, d in recorder.calls if p == phase and f == 1.0][0]
        assert "files/s" in final
    assert "0 mismatches" in [d for p, f, d in recorder.calls if p == "verify"][-1]
    # sync-end: each writing phase reports its flush before it ends; verify has none.
    syncing = {p for p, f, d in recorder.calls if d.startswith("syncing to storage")}
    assert syncing == set(PHASES) - {"verify"}
    assert all(f == 0.99 for p, f, d in recorder.calls if d.startswith("syncing"))


def test_rewrites_are_in_place(tmp_path):
    """Update passes keep each file's inode: no truncate-and-recreate, no new file."""
    inodes: dict[str, dict[int, int]] = {}

    def snapshot(phase):
        def take():
            root = tagged(tmp_path)
            inodes[phase] = {i: file_path(root, spec, i).stat().st_ino for i in range(spec.files)}
        return take

    spec = SmallFilesSpec(files=40, file_size="12KiB", folders=4, threads=2, patterns="0x00,0xff,0x55", verify=True)
    recorder = Recorder(snapshot("before-update-2"), at="update-2")
    recorder2 = Recorder(snapshot("before-verify"), at="verify")

    def both(*call):
        recorder(*call)
        recorder2(*call)

    engine().run(spec.job(), tmp_path, "t1", both)
    assert inodes["before-update-2"] == inodes["before-verify"]


@pytest.mark.parametrize("flush", ["none", "fsync"])
def test_other_flush_policies_are_recorded(tmp_path, flush):
    spec = SmallFilesSpec(files=30, file_size="4KiB", folders=3, threads=2, patterns="1,2", flush=flush)
    results = engine().run(spec.job(), tmp_path, "t1", Recorder())
    assert [r.name for r in results] == ["create", "update-1"]
    assert all(r.flush == flush and r.sync_seconds == 0 and r.complete for r in results)


def test_one_thread_and_odd_sizes(tmp_path):
    spec = SmallFilesSpec(files=9, file_size=5000, folders=9, threads=1, patterns="0x55", verify=True, data="pattern")
    results = engine().run(spec.job(), tmp_path, "t1", Recorder(), keep=True)
    assert [r.name for r in results] == ["create", "verify"] and results[-1].mismatches == 0
    assert all(file_path(tagged(tmp_path), spec, i).read_bytes() == b"\x55" * 5000 for i in range(9))


@pytest.mark.parametrize("content, ratio", [({}, 1.0), ({"compress": 50}, 0.5)])
def test_backup_shaped_data_compresses_as_asked_and_verifies(tmp_path, content, ratio):
    spec = SmallFilesSpec(files=60, file_size="64KiB", folders=3, threads=2, patterns="0,1", verify=True, **content)
    results = engine().run(spec.job(), tmp_path, "t1", Recorder(), keep=True)
    assert results[-1].name == "verify" and results[-1].mismatches == 0
    files = [file_path(tagged(tmp_path), spec, i).read_bytes() for i in range(spec.files)]
    assert len(set(files)) == spec.files  # fresh data in every file
    data = b"".join(files)
    assert zlib.compress(data) and abs(len(zlib.compress(data)) / len(data) - ratio) <= 0.05


def test_verify_of_fresh_data_counts_a_corrupted_file(tmp_path):
    spec = SmallFilesSpec(files=50, file_size="16KiB", folders=2, threads=2, patterns="0,1", verify=True)

    def corrupt():
        with open(file_path(tagged(tmp_path), spec, 7), "r+b") as f:
            f.seek(100)
            byte = f.read(1)
            f.seek(100)
            f.write(bytes([byte[0] ^ 1]))

    results = engine().run(spec.job(), tmp_path, "t1", Recorder(corrupt, at="verify"))
    assert results[-1].mismatches == 1


def test_more_threads_than_files(tmp_path):
    spec = SmallFilesSpec(files=3, file_size=100, folders=1, threads=8, verify=True)
    results = engine().run(spec.job(), tmp_path, "t1", Recorder())
    assert all(r.files == 3 for r in results) and results[-1].mismatches == 0


def test_verify_counts_a_corrupted_file(tmp_path):
    def corrupt():
        path = file_path(tagged(tmp_path), SMALL, 123)
        with open(path, "r+b") as f:
            f.seek(4000)
            f.write(b"\x00")

    results = engine().run(SMALL.job(), tmp_path, "t1", Recorder(corrupt, at="verify"))
    assert results[-1].name == "verify" and results[-1].mismatches == 1 and results[-1].complete
    assert not tagged(tmp_path).exists()


def test_verify_counts_missing_short_and_long_files(tmp_path):
    def damage():
        root = tagged(tmp_path)
        file_path(root, SMALL, 0).unlink()
        os.truncate(file_path(root, SMALL, 1), 8 * KIB - 1)
        with open(file_path(root, SMALL, 2), "ab") as f:
            f.write(b"\xaa")  # right bytes, one too many

    results = engine().run(SMALL.job(), tmp_path, "t1", Recorder(damage, at="verify"))
    assert results[-1].mismatches == 3 and results[-1].files == 200


def test_existing_tagged_folder_is_refused_and_left_alone(tmp_path):
    root = tagged(tmp_path)
    root.mkdir()
    (root / "theirs").write_text("x")
    with pytest.raises(RefusedError, match="already exists"):
        engine().run(SMALL.job(), tmp_path, "t1", Recorder())
    assert (root / "theirs").read_text() == "x"


@pytest.mark.parametrize("run_id", ["", "../x", "a/b", ".hidden"])
def test_run_id_must_name_one_folder(tmp_path, run_id):
    with pytest.raises(InputError):
        engine().run(SMALL.job(), tmp_path, run_id, Recorder())
    assert list(tmp_path.iterdir()) == []


def test_missing_parent_is_an_input_error(tmp_path):
    with pytest.raises(InputError):
        engine().check(SMALL.job(), tmp_path / "nope")


def test_a_failing_callback_cleans_up_and_propagates(tmp_path):
    def boom():
        raise RuntimeError("callback broke")

    with pytest.raises(RuntimeError, match="callback broke") as caught:
        engine().run(SMALL.job(), tmp_path, "t1", Recorder(boom, at="update-2"))
    assert not tagged(tmp_path).exists()
    assert [r.name for r in caught.value.partial] == ["create", "update-1", "update-2"]


def test_failure_keeps_the_folder_when_asked(tmp_path):
    def boom():
        raise KeyboardInterrupt

    with pytest.raises(Interrupted):
        engine().run(SMALL.job(), tmp_path, "t1", Recorder(boom, at="update-1"), keep=True)
    assert tagged(tmp_path).is_dir()


# ---- interruption -------------------------------------------------------------------------

def test_ctrl_c_during_update_1_cleans_up_and_keeps_partial_results(tmp_path):
    def ctrl_c():
        raise KeyboardInterrupt

    with pytest.raises(Interrupted) as caught:
        engine().run(SMALL.job(), tmp_path, "t1", Recorder(ctrl_c, at="update-1"))
    assert not tagged(tmp_path).exists()
    partial = caught.value.partial
    assert [r.name for r in partial] == ["create", "update-1"]
    assert partial[0].complete and partial[0].files == 200
    assert not partial[1].complete and partial[1].files < 200
    assert "update-1" in caught.value.message and "removed" in caught.value.message
    assert child_pids() == set()


def stuck_file(tmp_path: Path, spec: SmallFilesSpec, i: int) -> Path:
    """Replace file i with a FIFO: the worker that opens it for writing blocks there."""
    path = file_path(tagged(tmp_path), spec, i)
    path.unlink()
    os.mkfifo(path)
    return path


def test_ctrl_c_while_workers_run_stops_and_reaps_them(tmp_path):
    spec = SmallFilesSpec(files=200, file_size="8KiB", folders=7, threads=2, flush="none")
    recorder = Recorder(lambda: stuck_file(tmp_path, spec, 150), at="update-1")
    interrupter = Recorder(lambda: os.kill(os.getpid(), signal.SIGINT), at="update-1", when="running")

    def both(*call):
        recorder(*call)
        interrupter(*call)

    with pytest.raises(Interrupted) as caught:
        engine().run(spec.job(), tmp_path, "t1", both)
    assert interrupter.fired
    assert not tagged(tmp_path).exists()
    last = caught.value.partial[-1]
    assert last.name == "update-1" and not last.complete and last.files < 200
    assert child_pids() == set()  # the blocked worker was killed and reaped


def test_workers_ignore_a_ctrl_c_sent_to_them(tmp_path):
    """Ctrl-C reaches the whole process group; only the engine's process acts on it."""
    spec = SmallFilesSpec(files=200, file_size="8KiB", folders=7, threads=2, flush="none", verify=True)
    state: dict = {}

    def block():
        # File 100 is the first of the second worker's chunk: its verify read blocks there.
        state["fifo"] = stuck_file(tmp_path, spec, 100)

    def ctrl_c_to_workers_then_unblock():
        workers = child_pids()
        assert len(workers) == 2
        for pid in workers:
            os.kill(pid, signal.SIGINT)
        # Open and close the FIFO's write side: the blocked reader then reads 0 bytes.
        deadline = time.monotonic() + 10
        while True:
            try:
                os.close(os.open(state["fifo"], os.O_WRONLY | os.O_NONBLOCK))
                return
            except OSError as exc:  # ENXIO: the worker has not reached its open yet
                if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    start = Recorder(block, at="verify")
    running = Recorder(ctrl_c_to_workers_then_unblock, at="verify", when="running")

    def both(*call):
        start(*call)
        running(*call)

    results = engine().run(spec.job(), tmp_path, "t1", both)
    assert running.fired
    assert all(r.complete and r.files == 200 for r in results)
    assert results[-1].mismatches == 1  # the empty FIFO


def test_a_killed_worker_fails_the_run_cleanly(tmp_path):
    spec = SmallFilesSpec(files=200, file_size="8KiB", folders=7, threads=2, flush="none")

    def kill_the_blocked_worker():
        # Worker 1 (files 100-199) blocks on the FIFO at file 150; worker 0 finishes its
        # files and exits (a zombie until reaped). The one left alive is the blocked one.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            alive = [pid for pid in child_pids() if process.running(pid)]
            if len(alive) == 1:
                os.kill(alive[0], signal.SIGKILL)
                return
            time.sleep(0.01)
        raise AssertionError("no worker blocked on the FIFO")

    start = Recorder(lambda: stuck_file(tmp_path, spec, 150), at="update-1")
    running = Recorder(kill_the_blocked_worker, at="update-1", when="running")

    def both(*call):
        start(*call)
        running(*call)

    with pytest.raises(EngineError, match=r"killed by signal 9 \(SIGKILL\)") as caught:
        engine().run(spec.job(), tmp_path, "t1", both)
    assert not tagged(tmp_path).exists() and child_pids() == set()
    last = caught.value.partial[-1]
    assert last.name == "update-1" and not last.complete and 100 <= last.files < 200


# ---- refusals and a full filesystem on tmpfs (root) ----------------------------------------

def test_refuses_when_space_is_short(mount_point):
    mnt = mount_point("tmpfs", "size=4m")
    spec = SmallFilesSpec(files=100, file_size="64KiB", folders=4, threads=2)
    with pytest.raises(RefusedError, match="not enough free space") as caught:
        engine().run(spec.job(), mnt, "t1", Recorder())
    assert caught.value.fix
    assert list(mnt.iterdir()) == []


def test_refuses_when_inodes_are_short(mount_point):
    mnt = mount_point("tmpfs", "size=64m,nr_inodes=50")
    spec = SmallFilesSpec(files=100, file_size="4KiB", folders=4, threads=2)
    with pytest.raises(RefusedError, match="inodes"):
        engine().run(spec.job(), mnt, "t1", Recorder())
    assert list(mnt.iterdir()) == []


def test_refuses_a_read_only_filesystem(mount_point):
    mnt = mount_point("tmpfs", "ro,size=4m")
    spec = SmallFilesSpec(files=10, file_size="4KiB", folders=2, threads=2)
    with pytest.raises(RefusedError, match="read-only"):
        engine().check(spec.job(), mnt)
    with pytest.raises(RefusedError, match="read-only"):
        engine().run(spec.job(), mnt, "t1", Recorder())
    assert list(mnt.iterdir()) == []


def test_fits_exactly_what_check_allows(mount_point):
    mnt = mount_point("tmpfs", "size=8m")
    spec = SmallFilesSpec(files=100, file_size="16KiB", folders=4, threads=2, verify=True)
    engine().check(spec.job(), mnt)
    results = engine().run(spec.job(), mnt, "t1", Recorder())
    assert results[-1].mismatches == 0 and list(mnt.iterdir()) == []


def test_filesystem_filling_up_mid_run(mount_point):
    mnt = mount_point("tmpfs", "size=8m")
    spec = SmallFilesSpec(files=100, file_size="16KiB", folders=4, threads=2)

    def fill_all_but_40_files():
        # Another writer eats the space after the check passed.
        free = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
        with open(mnt / "filler", "wb") as f:
            f.write(b"\x01" * (free - 40 * 16 * KIB))

    with pytest.raises(EngineError, match="filesystem full after") as caught:
        engine().run(spec.job(), mnt, "t1", Recorder(fill_all_but_40_files, at="create"))
    assert "phase create" in caught.value.message and caught.value.fix
    assert sorted(p.name for p in mnt.iterdir()) == ["filler"]  # the tagged folder is gone
    partial = caught.value.partial
    assert [r.name for r in partial] == ["create"]
    assert not partial[0].complete and 0 < partial[0].files < 100
    assert f"after {partial[0].files:,} files" in caught.value.message
    assert child_pids() == set()


def _sectors_read(device: str) -> int:
    """Sectors read by a block device so far (/sys/block/NAME/stat, field 3)."""
    return int(Path(f"/sys/block/{device}/stat").read_text().split()[2])


@pytest.mark.root
def test_verify_reads_from_storage_not_the_page_cache(tmp_path, loop_device):
    # ext4 on a loop device the test made: the loop device's own counters say what the
    # filesystem read from its device. Written, synced and still cached, the files would be read
    # back from the page cache with the device idle; dropped first, every byte comes from it.
    require_root_tool("mkfs.ext4", "mount", "umount")
    loop = loop_device("verify", 128 * 2**20)
    subprocess.run(["mkfs.ext4", "-q", "-F", loop.device], check=True, capture_output=True, timeout=120)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", loop.device, str(mnt)], check=True, capture_output=True, timeout=60)
    try:
        spec = SmallFilesSpec(files=200, file_size="64KiB", folders=4, threads=2, patterns="0,1", verify=True)
        read = {}

        def on_phase(phase: str, fraction: float, detail: str) -> None:
            if phase == "verify" and fraction == 0.0:
                read["before"] = _sectors_read(loop.name)

        def on_result(result: PhaseResult) -> None:
            if result.name == "verify":
                read["after"] = _sectors_read(loop.name)

        results = engine().run(spec.job(), mnt, "t1", on_phase, on_result=on_result)
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True, timeout=60)
    assert results[-1].name == "verify" and results[-1].mismatches == 0
    assert (read["after"] - read["before"]) * 512 >= 200 * 64 * KIB
