"""ZFS for real in the lab VM, through backupbench's own `apply`: RAIDZ2, dRAID2 with a
distributed spare, and RAIDZ1 with a special mirror and a log built, measured (kb2014,
first-write, small files), followed down to their member disks by the monitor, destroyed, and
their labels cleared; field note D's four S3 layouts end to end; and a guest without the
module refused before any disk is made.

Needs root, the lab's host packages and the lab kernel's ZFS module (scripts/install-zfs.sh;
`make test` runs it).
"""

from __future__ import annotations

import csv
import json
import re
import sqlite3
from pathlib import Path

import pytest
import lab_support
from host_support import cli_argv, run_cli
from lab_support import commands_run as _commands_run, lab_missing

from backupbench.errors import ToolMissingError
from backupbench.lab.disks import parse_disks
from backupbench.lab.image import LabImage
from backupbench.lab.vm import LabVM

pytestmark = [pytest.mark.real, pytest.mark.vm, pytest.mark.root]

ROOT = Path(__file__).resolve().parents[2]
DISKS = [f"/dev/vd{letter}" for letter in "abcdef"]


@pytest.fixture(autouse=True)
def _needs_lab():
    missing = lab_missing("zpool")
    if missing:
        pytest.skip(missing)


@pytest.fixture(scope="module")
def zfs_image():
    return lab_support.zfs_image()


@pytest.fixture(scope="module")
def vm(tmp_path_factory):
    with lab_support.zfs_lab_vm(tmp_path_factory, "6x1GiB", "zfs") as machine:
        yield machine


def _layout(name: str, extra: str, devices: list[str] = DISKS) -> str:
    return f'\n[[layout]]\nname = "{name}"\nkind = "zfs"\ndevices = {json.dumps(devices)}\n{extra}'


def _apply_in_guest(vm: LabVM, name: str, recipe_text: str, timeout: float = 900) -> tuple[str, Path, int]:
    folder = vm.shared / name  # type: ignore[attr-defined]
    folder.mkdir()
    recipe = folder / "recipe.toml"
    recipe.write_text(recipe_text)
    results = folder / "results"
    done = vm.run(cli_argv("apply", str(recipe), "--yes", "--results", str(results)), timeout=timeout)
    return done.output, results, done.returncode


def _guest_disks_are_empty(vm: LabVM) -> str:
    """What is left on the disks: pools, importable labels, partitions, signatures."""
    result = vm.run("zpool list -H -o name; zpool import 2>&1 | grep -v 'no pools available'; "
                    "ls /dev/vd?[0-9] 2>/dev/null; for d in /dev/vd?; do blkid -p \"$d\" && echo \"$d\"; done; true")
    return result.output.strip()


def _run_of(results: Path) -> dict:
    with sqlite3.connect(results / "results.db") as db:
        [(run_id, status, error)] = db.execute("SELECT run_id, status, error FROM runs").fetchall()
    assert status == "complete", error
    return json.loads((results / "runs" / run_id / "result.json").read_text())


def _monitor_columns(results: Path, run: dict, name: str) -> set[str]:
    [op] = [op for op in run["operations"] if op["name"] == name]
    path = results / "runs" / run["run_id"] / op["monitor"]["csv"][-1]
    with path.open() as handle:
        header = next(csv.reader(handle))
    return {column.split(":")[0] for column in header if ":" in column}


def test_raidz2_and_draid2_with_a_distributed_spare_built_measured_destroyed_and_cleared(vm):
    recipe = ('name = "zfs-lab"\n'
              f'devices = {json.dumps(DISKS)}\n'
              + _layout("raidz2", 'vdev = "raidz2"\nashift = 12\n'
                        'properties = { recordsize = "1M", xattr = "sa", atime = "off", compression = "lz4" }\n')
              + _layout("draid2", 'vdev = "draid2"\ndraid_data = 3\ndraid_spares = 1\n')
              + '\n[[workload]]\nkind = "kb2014"\noperations = ["active-full"]\nsize = "64MiB"\nruntime = "2s"\nramp = 0\n')
    output, results, code = _apply_in_guest(vm, "kb2014", recipe)
    assert code == 0, output[-5000:]
    run = _run_of(results)
    # the very pools asked for: draid2 with 3 data disks, 6 children and one distributed spare
    creates = [line for line in _commands_run(results) if line.startswith("zpool create")]
    assert len(creates) == 2, creates
    assert re.search(r"-o ashift=12 .*-O atime=off -O compression=lz4 -O recordsize=1M -O xattr=sa "
                     r"bb_raidz2_\S+ raidz2 /dev/vda /dev/vdb /dev/vdc /dev/vdd /dev/vde /dev/vdf$", creates[0]), creates
    assert " draid2:3d:6c:1s /dev/vda " in creates[1], creates
    speeds = {op["name"]: op["figures"] for op in run["operations"]}
    assert set(speeds) == {"raidz2/active-full", "draid2/active-full"}
    for layout in ("raidz2", "draid2"):
        figures = speeds[f"{layout}/active-full"]
        assert figures["effective_bw"] > 0
        # ZFS's own figures for the phase: the ARC's hit ratio and the pool's fill
        assert 0 <= figures["zfs.arc_hit"] <= 100 and figures["zfs.pool_allocated"] > 0
        # The monitor went from the pool through its partitions to the member disks.
        columns = _monitor_columns(results, run, f"{layout}/active-full")
        assert {"vda", "vdb", "vdc", "vdd", "vde", "vdf"} <= columns, columns
        stack = run["host"]["device_stacks"][layout]
        assert stack["describe"].count("zfs on pool bb_") == 1 and stack["members"] == [d[5:] for d in DISKS]
    assert _guest_disks_are_empty(vm) == ""


def test_special_mirror_and_log_carry_every_file_workload(vm):
    recipe = ('name = "zfs-special"\n'
              f'devices = {json.dumps(DISKS)}\n'
              + _layout("z1", 'vdev = "raidz1"\nspecial = ["/dev/vdd", "/dev/vde"]\nlog = ["/dev/vdf"]\n'
                        'properties = { special_small_blocks = "64K" }\n', DISKS[:3])
              + '\n[[workload]]\nkind = "kb2014"\noperations = ["restore-random"]\nsize = "32MiB"\nruntime = "1s"\nramp = 0\n'
              '\n[[workload]]\nkind = "first-write"\nsize = "16MiB"\n'
              '\n[[workload]]\nkind = "smallfiles"\nfiles = 200\nfile_size = "16KiB"\nfolders = 4\n'
              'patterns = ["0x00", "0xff"]\n')
    output, results, code = _apply_in_guest(vm, "special", recipe)
    assert code == 0, output[-5000:]
    run = _run_of(results)
    [create] = [line for line in _commands_run(results) if line.startswith("zpool create")]
    assert create.endswith(" raidz1 /dev/vda /dev/vdb /dev/vdc special mirror /dev/vdd /dev/vde log /dev/vdf"), create
    names = [op["name"] for op in run["operations"]]
    assert names == ["z1/1-kb2014/restore-random", "z1/2-first-write/first-write", "z1/2-first-write/overwrite",
                     "z1/2-first-write/read", "z1/3-smallfiles/create", "z1/3-smallfiles/update-1"]
    assert all(op["figures"]["effective_bw"] > 0 for op in run["operations"])
    columns = _monitor_columns(results, run, "z1/2-first-write/first-write")
    assert {"vda", "vdb", "vdc", "vdd", "vde", "vdf"} <= columns, columns  # special and log disks too
    assert _guest_disks_are_empty(vm) == ""


def test_a_guest_without_the_zfs_module_is_refused_before_any_disk(zfs_image, tmp_path):
    without = LabImage(zfs_image.directory, zfs_image.vmlinux, zfs_image.initramfs, zfs_image.kernel_release,
                       zfs_image.packages, zfs=None)
    work = tmp_path / "work"
    with pytest.raises(ToolMissingError, match="has no ZFS module") as info:
        with LabVM(parse_disks("4x1GiB"), image=without, work_parent=work, needs=frozenset({"zfs"})):
            pass
    assert "install-zfs.sh" in (info.value.fix or "")
    assert not work.exists() or list(work.iterdir()) == []


def test_field_note_d_end_to_end_with_small_object_counts(zfs_image, tmp_path):
    """MinIO erasure coding over six drives (MinIO with several drives in the guest), and one
    MinIO drive on md RAID6, RAIDZ2 and dRAID2, the same disks, in one lab run."""
    example = (ROOT / "examples" / "field-note-d-s3-layouts.toml").read_text()
    small = example.replace("objects = 200", "objects = 8").replace("concurrency = 16", "concurrency = 4")
    assert small != example
    recipe = tmp_path / "field-note-d.toml"
    recipe.write_text(small)
    results = tmp_path / "results"
    done = run_cli(["lab", str(recipe), "--disks", "6x1GiB", "--disk-rate", "50MiB/s", "--results", str(results),
                    "--work-dir", str(tmp_path / "work")], timeout=1800)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-5000:]
    run = _run_of(results)
    names = {op["name"] for op in run["operations"]}
    assert names == {f"{layout}/{phase}" for layout in ("minio-ec", "raid6", "raidz2", "draid2")
                     for phase in ("put", "get")}
    assert all(op["figures"]["effective_bw"] > 0 for op in run["operations"])
    assert "Layouts compared" in done.stdout
    for layout in ("minio-ec", "raid6", "raidz2", "draid2"):
        assert re.search(rf"^\s*{layout}\b", done.stdout, re.M), done.stdout[-3000:]
    assert list((tmp_path / "work").iterdir()) == []
