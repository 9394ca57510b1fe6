"""A recipe's layouts on devices of their own, repeated, for real on the host: built together,
measured in alternating rounds (a, b, then b, a), every sample stored, and everything torn
down after, also on Ctrl-C and after a SIGKILL and cleanup (runner/alternate.py); layouts
sharing a device keep their samples back to back."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from host_support import run_cli, start_cli, write_recipe

pytestmark = pytest.mark.real

WORKLOAD = ('\n[[workload]]\nkind = "kb2014"\noperations = ["active-full"]\nsize = "32MiB"\nruntime = "1s"\nramp = 0\n'
            'repeat = 2\n')


def written_between(folder: Path) -> tuple[int, int]:
    """When the first and the last of a sample's raw files were last written (ns)."""
    times = [path.stat().st_mtime_ns for path in folder.iterdir() if path.is_file()]
    assert times, f"{folder} holds no raw file"
    return min(times), max(times)


def test_two_layouts_on_their_own_devices_alternate_their_samples_and_are_torn_down(cli, tmp_path, loops):
    (d0, _), (d1, _) = loops(2)
    layouts = (f'\n[[layout]]\nname = "xfs"\nkind = "filesystem"\ndevices = ["{d0}"]\nfilesystem = {{ type = "xfs" }}\n'
               f'\n[[layout]]\nname = "ext4"\nkind = "filesystem"\ndevices = ["{d1}"]\n'
               'filesystem = { type = "ext4" }\n')
    recipe = write_recipe(tmp_path, [d0, d1], layouts, WORKLOAD)
    mount_root = tmp_path / "mnt"
    result = cli("apply", str(recipe), "--yes", "--mount-root", str(mount_root), "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    run = document["run"]
    assert run["status"] == "complete"
    assert any(note.startswith("repeats: layouts xfs, ext4 use no device in common") for note in run["notes"])
    assert not any("back to back" in note for note in run["notes"])
    phases = {op["name"]: op for op in document["phases"]}
    assert list(phases) == ["xfs/active-full", "ext4/active-full"]

    run_dir = cli.results / "runs" / run["id"]
    spans = {(layout, n): written_between(run_dir / layout / f"sample-{n}") for layout in ("xfs", "ext4")
             for n in (1, 2)}
    # Round 1: xfs then ext4; round 2: ext4 then xfs. Each sample's files are all written
    # before the next sample's first one.
    order = [("xfs", 1), ("ext4", 1), ("ext4", 2), ("xfs", 2)]
    for earlier, later in zip(order, order[1:]):
        assert spans[earlier][1] <= spans[later][0], f"{earlier} was not measured before {later}: {spans}"

    shown = cli("show", run["id"], "--json")
    assert shown.returncode == 0, shown.stderr
    stored = {op["name"]: op for op in json.loads(shown.stdout)["phases"]}
    assert set(stored) == set(phases)
    for name in phases:
        bandwidth = next(f for f in stored[name]["figures"] if f["name"] == "effective_bw")
        assert len(bandwidth["samples"]) == 2 and all(value > 0 for value in bandwidth["samples"]), bandwidth

    # Torn down: nothing mounted, no signature left, the journal closed.
    assert str(mount_root) not in subprocess.run(["findmnt", "-rn"], capture_output=True, text=True).stdout
    assert list(mount_root.iterdir()) == []
    for device in (d0, d1):
        probe = subprocess.run(["blkid", "-p", device], capture_output=True, text=True)
        assert probe.returncode == 2, f"{device} still carries {probe.stdout}"
    assert not list((cli.results / "journal").glob("*.open.jsonl"))
    assert list((cli.results / "journal").glob("*.closed.jsonl"))


def test_two_layouts_sharing_a_device_keep_their_samples_back_to_back(cli, tmp_path, loops):
    [(device, _)] = loops(1)
    layouts = (f'\n[[layout]]\nname = "xfs"\nkind = "filesystem"\ndevices = ["{device}"]\n'
               'filesystem = { type = "xfs" }\n'
               f'\n[[layout]]\nname = "ext4"\nkind = "filesystem"\ndevices = ["{device}"]\n'
               'filesystem = { type = "ext4" }\n')
    recipe = write_recipe(tmp_path, [device], layouts, WORKLOAD)
    result = cli("apply", str(recipe), "--yes", "--mount-root", str(tmp_path / "mnt"), "--json")
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout)["run"]
    assert any(note.startswith("repeats: each layout's 2 samples ran back to back") and
               f"xfs and ext4 both use {device}" in note for note in run["notes"]), run["notes"]
    run_dir = cli.results / "runs" / run["id"]
    order = [("xfs", 1), ("xfs", 2), ("ext4", 1), ("ext4", 2)]
    spans = {key: written_between(run_dir / key[0] / f"sample-{key[1]}") for key in order}
    for earlier, later in zip(order, order[1:]):
        assert spans[earlier][1] <= spans[later][0], f"{earlier} was not measured before {later}: {spans}"
    assert subprocess.run(["blkid", "-p", device], capture_output=True).returncode == 2


def _stopped_in_round_two(tmp_path: Path, loops, stop) -> tuple[Path, Path, list[str]]:
    """apply of two alternating layouts, `stop(proc)` called once round 2 has begun (both
    layouts built and mounted); -> (results, mount root, devices)."""
    (d0, _), (d1, _) = loops(2)
    layouts = (f'\n[[layout]]\nname = "xfs"\nkind = "filesystem"\ndevices = ["{d0}"]\nfilesystem = {{ type = "xfs" }}\n'
               f'\n[[layout]]\nname = "ext4"\nkind = "filesystem"\ndevices = ["{d1}"]\n'
               'filesystem = { type = "ext4" }\n')
    recipe = write_recipe(tmp_path, [d0, d1], layouts, WORKLOAD.replace('runtime = "1s"', 'runtime = "5s"'))
    root, results = tmp_path / "mnt", tmp_path / "results"
    proc = start_cli(["apply", str(recipe), "--yes", "--quiet", "--mount-root", str(root), "--results", str(results)],
                     stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        # Round 2 starts with ext4: its second sample under way means both layouts are up.
        while not list(results.glob("runs/*/ext4/sample-2/active-full.fio")):
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "round 2 never started"
            time.sleep(0.1)
        for device in (d0, d1):
            assert subprocess.run(["findmnt", "-n", "-S", device], capture_output=True).returncode == 0
        stop(proc)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return results, root, [d0, d1]


def _nothing_left(results: Path, root: Path, devices: list[str]) -> None:
    for device in devices:
        assert subprocess.run(["findmnt", "-n", "-S", device], capture_output=True).returncode != 0
        assert subprocess.run(["blkid", "-p", device], capture_output=True).returncode == 2, f"{device} not wiped"
    assert list(root.iterdir()) == []
    assert not list((results / "journal").glob("*.open.jsonl"))
    history = run_cli(["history", "--json", "--results", str(results)])
    assert '"status": "interrupted"' in history.stdout, history.stdout + history.stderr


def test_ctrl_c_in_round_two_tears_down_every_built_layout(tmp_path, loops):
    root = tmp_path / "mnt"
    try:
        results, root, devices = _stopped_in_round_two(tmp_path, loops, lambda proc: proc.send_signal(signal.SIGINT))
        _nothing_left(results, root, devices)
    finally:
        subprocess.run(["umount", "-R", str(root)], capture_output=True)


def test_sigkill_in_round_two_then_cleanup_tears_down_every_built_layout(tmp_path, loops):
    root = tmp_path / "mnt"
    try:
        results, root, devices = _stopped_in_round_two(tmp_path, loops, lambda proc: proc.kill())
        assert all(subprocess.run(["findmnt", "-n", "-S", d], capture_output=True).returncode == 0 for d in devices)
        cleanup = run_cli(["cleanup", "--results", str(results)])
        assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
        _nothing_left(results, root, devices)
    finally:
        subprocess.run(["umount", "-R", str(root)], capture_output=True)


def test_two_minio_layouts_alternate_with_each_server_kept_across_the_rounds(cli, tmp_path, loops):
    from s3_fixtures import require_s3_tools
    require_s3_tools()
    (d0, _), (d1, _) = loops(2)
    layouts = "".join(f'\n[[layout]]\nname = "{name}"\nkind = "filesystem"\ndevices = ["{device}"]\nminio = true\n'
                      f'filesystem = {{ type = "{fs}" }}\n' for name, device, fs in (("a", d0, "xfs"), ("b", d1, "ext4")))
    workload = '\n[[workload]]\nkind = "s3"\nobjects = 20\nobject_size = "64KiB"\nconcurrency = 4\nrepeat = 2\n'
    recipe = write_recipe(tmp_path, [d0, d1], layouts, workload)
    result = cli("apply", str(recipe), "--yes", "--mount-root", str(tmp_path / "mnt"), "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    run = document["run"]
    assert any(note.startswith("repeats: layouts a, b use no device in common") for note in run["notes"]), run["notes"]
    phases = {op["name"]: op for op in document["phases"]}
    assert set(phases) == {f"{layout}/{phase}" for layout in ("a", "b") for phase in ("put", "get", "delete")}
    for name, op in phases.items():
        ops = next(f for f in op["figures"] if f["name"] == "ops")
        assert ops["samples"] == [20, 20], (name, ops)
    run_dir = cli.results / "runs" / run["id"]
    order = [("a", 1), ("b", 1), ("b", 2), ("a", 2)]
    spans = {key: written_between(run_dir / key[0] / f"sample-{key[1]}") for key in order}
    for earlier, later in zip(order, order[1:]):
        assert spans[earlier][1] <= spans[later][0], f"{earlier} was not measured before {later}: {spans}"
    # One server per layout for all its rounds: the journal saw two MinIO processes started,
    # not one per sample, and both removed.
    [journal] = (cli.results / "journal").glob("*.closed.jsonl")
    entries = [json.loads(line) for line in journal.read_text().splitlines()]
    servers = {e["id"] for e in entries if e["event"] == "create" and e["artefact"].get("name") == "minio"}
    assert len(servers) == 2, entries
    assert servers <= {e["id"] for e in entries if e["event"] == "removed"}
    for device in (d0, d1):
        assert subprocess.run(["blkid", "-p", device], capture_output=True).returncode == 2
    assert str(tmp_path / "mnt") not in subprocess.run(["findmnt", "-rn"], capture_output=True, text=True).stdout
