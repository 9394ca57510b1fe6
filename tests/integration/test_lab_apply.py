"""backupbench's own layouts code for real inside the lab VM, run the way a user runs it:
`backupbench lab RECIPE`. LVM linear/striped/thin/snapshot and md RAID6 are provisioned by
`apply`, measured, torn down; field note A's 4x; a disk that holds a filesystem is refused."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from host_support import CliResult, run_cli
from lab_support import lab_missing

pytestmark = [pytest.mark.real, pytest.mark.vm, pytest.mark.root]

DEVICES = '["/dev/vda", "/dev/vdb", "/dev/vdc", "/dev/vdd"]'


@pytest.fixture(autouse=True)
def _needs_lab():
    missing = lab_missing()
    if missing:
        pytest.skip(missing)


def lab(tmp_path: Path, recipe_text: str, *extra: str, timeout: float = 900) -> tuple[CliResult, Path]:
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(recipe_text)
    results = tmp_path / "results"
    done = run_cli(["lab", str(recipe), "--results", str(results), "--work-dir", str(tmp_path), *extra],
                   timeout=timeout)
    return done, results


def stored_runs(results: Path) -> list[tuple]:
    with sqlite3.connect(results / "results.db") as db:
        return db.execute("SELECT run_id, status, error FROM runs").fetchall()


def test_every_lvm_kind_and_raid6_built_measured_and_torn_down_by_apply(tmp_path):
    layouts = "".join(
        f'\n[[layout]]\nname = "{name}"\nkind = "{kind}"\ndevices = {DEVICES}\n{extra}'
        for name, kind, extra in (
            ("linear", "lvm-linear", 'size = "320MiB"\n'),  # XFS needs more than 300 MB
            ("striped", "lvm-striped", 'stripe_size = "128k"\nsize = "320MiB"\n'),
            ("thin", "lvm-thin", 'pool_size = "512MiB"\nchunk_size = "64k"\nvirtual_size = "1GiB"\n'),
            # The origin fills the first PV (255 extents of 4 MiB on a 1 GiB disk), so its
            # snapshot's COW lands on the second: the stack must reach it through the snapshot.
            ("snap", "lvm-snapshot", 'origin_size = "1020MiB"\nsnapshots = 1\nsnapshot_size = "128MiB"\n'),
            ("raid6", "mdraid", 'level = 6\nchunk = "64k"\nfilesystem = { type = "ext4" }\n'),
            # 8 MiB of CoW space for 32 MiB of first writes: the snapshot overflows (Invalid).
            ("overflow", "lvm-snapshot", 'origin_size = "320MiB"\nsnapshots = 1\nsnapshot_size = "8MiB"\n'),
        ))
    recipe = (f'name = "lab-kinds"\ndevices = {DEVICES}\n{layouts}'
              '\n[[workload]]\nkind = "first-write"\nsize = "32MiB"\n')
    done, results = lab(tmp_path, recipe, "--disks", "4x1GiB", "--disk-rate", "100MiB/s")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    [(run_id, status, error)] = stored_runs(results)
    # The overflowing snapshot voids the run (field note E's first attempt), and says why.
    assert status == "void", error
    run = json.loads((results / "runs" / run_id / "result.json").read_text())
    assert any("snapshot snap1 of overflow overflowed and is Invalid" in note for note in run["notes"])
    names = [op["name"] for op in run["operations"]]
    for layout in ("linear", "striped", "thin", "snap", "raid6", "overflow"):
        assert [n for n in names if n.startswith(f"{layout}/")] == [
            f"{layout}/first-write", f"{layout}/overwrite", f"{layout}/read"]
    ops = {op["name"]: op for op in run["operations"]}
    assert all(op["figures"]["effective_bw"] > 0 for op in run["operations"])
    # The classic snapshot's fill was sampled while the workload wrote under it.
    assert ops["snap/first-write"]["figures"]["snapshot.snap1.data_pct_max"] > 0
    # The origin's writes copied into the COW on vdb, which the monitor sampled with the origin's vda.
    snap_stack = run["host"]["device_stacks"]["snap"]
    assert snap_stack["members"] == ["vda", "vdb"] and "-snap1-cow)" in snap_stack["describe"], snap_stack
    # So was the thin pool's (monitor/thinwatch.py): data and metadata %, highest per phase.
    thin = ops["thin/first-write"]["figures"]
    pool_data = [v for k, v in thin.items() if k.startswith("thinpool.") and k.endswith(".data_pct_max")]
    pool_meta = [v for k, v in thin.items() if k.startswith("thinpool.") and k.endswith(".metadata_pct_max")]
    assert len(pool_data) == 1 and 0 < pool_data[0] <= 100 and len(pool_meta) == 1 and pool_meta[0] > 0, thin
    assert run["host"]["targets"]["raid6"]["fs_type"] == "ext4"
    assert run["host"]["targets"]["striped"]["fs_type"] == "xfs"
    # A failed teardown would have failed the run; the guest's journals stayed in the guest
    # (they name the guest's disks, which are other disks on the host). On the host: only the
    # lab's own journal (its work folder and QEMU), closed.
    assert "teardown failed" not in " ".join(run["notes"])
    journals = [p.name for p in (results / "journal").iterdir()]
    assert len(journals) == 1 and journals[0].startswith("lab-") and journals[0].endswith(".closed.jsonl")
    # The guest's run belongs to the host's lab process: had that died, the run would show interrupted.
    from backupbench.process import boot_id
    assert run["owner"].split()[0] == boot_id()


def test_field_note_a_striped_is_about_four_times_linear_through_apply(tmp_path):
    recipe = (f'name = "field-note-a-short"\ndevices = {DEVICES}\n'
              f'\n[[layout]]\nname = "linear"\nkind = "lvm-linear"\ndevices = {DEVICES}\n'
              f'\n[[layout]]\nname = "striped"\nkind = "lvm-striped"\ndevices = {DEVICES}\nstripes = 4\nstripe_size = "64k"\n'
              '\n[[workload]]\nkind = "kb2014"\noperations = ["active-full"]\nsize = "256MiB"\nruntime = "5s"\n'
              'jobs = 4\niodepth = 16\n')
    done, results = lab(tmp_path, recipe, "--disks", "4x1GiB", "--disk-rate", "50MiB/s")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    [(run_id, status, _)] = stored_runs(results)
    run = json.loads((results / "runs" / run_id / "result.json").read_text())
    speed = {op["name"]: op["figures"]["effective_bw"] for op in run["operations"]}
    ratio = speed["striped/active-full"] / speed["linear/active-full"]
    assert 3.0 <= ratio <= 4.5, speed
    assert "Layouts compared" in done.stdout


def test_a_virtual_disk_holding_a_filesystem_is_refused(tmp_path):
    recipe = ('name = "refusal"\ndevices = ["/dev/vda"]\n'
              '\n[[layout]]\nname = "x"\nkind = "filesystem"\ndevices = ["/dev/vda"]\n'
              '\n[[workload]]\nkind = "first-write"\nsize = "16MiB"\n')
    done, results = lab(tmp_path, recipe, "--disks", "1x512MiB:ext4")
    assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-3000:]
    assert "ext4" in done.stdout + done.stderr
    assert not (results / "results.db").exists() or stored_runs(results) == []
