"""Faults for real in the lab VM (issue 13), through backupbench's own `apply`: md RAID6 of 5
with a replacement measured healthy, degraded, rebuilding and rebuilt under restore-random;
RAIDZ2 onto a replacement disk and dRAID2 onto its distributed spare; and Ctrl-C in the middle
of a rebuild, after which the array is gone, the disks empty and md's speed limit restored.

Needs root, the lab's host packages and the lab kernel's ZFS module (make test installs them).
"""

from __future__ import annotations

import json
import shlex
import sqlite3
from pathlib import Path

import pytest
from host_support import cli_argv
from lab_support import commands_run as _commands_run, lab_missing, zfs_lab_vm

from backupbench.lab.vm import LabVM
from backupbench.units import MiB

pytestmark = [pytest.mark.real, pytest.mark.vm, pytest.mark.root]

DISKS = [f"/dev/vd{letter}" for letter in "abcdefg"]
DISK_MIB = 512  # md rebuilds a whole member: 32 s at the 16 MiB/s limit below
STATES = ("healthy", "degraded", "rebuilding", "rebuilt")
# Small and short: what these tests check is the states, the rebuild and the cleanup, not speed
# (bench/rebuild.py and the README's lab runs measure). Under TCG, laying out 256 MiB per state
# cost ~12 s each.
WORKLOAD = '\n[[workload]]\nkind = "kb2014"\noperations = ["restore-random"]\nsize = "64MiB"\nruntime = "2s"\nramp = 0\n'


@pytest.fixture(autouse=True)
def _needs_lab():
    missing = lab_missing("zpool")
    if missing:
        pytest.skip(missing)


@pytest.fixture(scope="module")
def vm(tmp_path_factory):
    with zfs_lab_vm(tmp_path_factory, f"7x{DISK_MIB}MiB", "fault") as machine:
        yield machine


def _recipe(folder: Path, layouts: str) -> Path:
    folder.mkdir()
    recipe = folder / "recipe.toml"
    recipe.write_text(f'name = "faults"\ndevices = {json.dumps(DISKS)}\n{layouts}{WORKLOAD}')
    return recipe


def _apply(vm: LabVM, name: str, layouts: str, timeout: float = 1200) -> tuple[dict, Path]:
    folder = vm.shared / name  # type: ignore[attr-defined]
    recipe = _recipe(folder, layouts)
    results = folder / "results"
    done = vm.run(cli_argv("apply", str(recipe), "--yes", "--results", str(results)), timeout=timeout)
    assert done.returncode == 0, done.output[-5000:]
    with sqlite3.connect(results / "results.db") as db:
        [(run_id, status, error)] = db.execute("SELECT run_id, status, error FROM runs").fetchall()
    assert status == "complete", error
    return json.loads((results / "runs" / run_id / "result.json").read_text()), results


def _leftovers(vm: LabVM) -> str:
    """Arrays, pools, labels, partitions or signatures left on the disks."""
    result = vm.run("grep '^md' /proc/mdstat; zpool list -H -o name; zpool import 2>&1 | grep -v 'no pools available'; "
                    "ls /dev/vd?[0-9] 2>/dev/null; for d in /dev/vd?; do blkid -p \"$d\" && echo \"$d\"; done; true")
    return result.output.strip()


def _by_state(run: dict, layout: str) -> dict[str, dict]:
    # result.json holds the record: the layout and state of a phase are its own keys (results/phase.py).
    return {op["state"]: op for op in run["operations"] if op["layout"] == layout}


def test_md_raid6_through_all_four_states_with_restore_random(vm):
    layout = ('[[layout]]\nname = "raid6"\nkind = "mdraid"\nlevel = 6\nchunk = "64k"\n'
              f'devices = {json.dumps(DISKS[:5])}\nfilesystem = {{ type = "xfs" }}\n'
              'fault = { member_runtime = "1s", fail = "/dev/vdc", replace = "/dev/vdf", speed_limit_max = "16MiB/s" }\n')
    run, results = _apply(vm, "md", layout)
    ops = _by_state(run, "raid6")
    for state in STATES:
        op = ops[state]
        assert op["name"] == f"raid6/{state}/restore-random" and op["status"] == "complete"
        assert op["figures"]["effective_bw"] > 0 and op["monitor"]["csv"]
    rebuild = ops["rebuild"]["figures"]
    # md rebuilds the whole member (less its superblock's offset) onto vdf, at no more than the limit set.
    assert 0.85 * DISK_MIB * MiB < rebuild["rebuild_bytes"] <= DISK_MIB * MiB
    assert rebuild["rebuild_seconds"] > 0 and "rebuild_bw_loaded" in rebuild
    assert rebuild["rebuild_bw_idle"] < 16 * MiB * 1.3
    assert ops["member"]["figures"]["read_bw"] > 0 and ops["member"]["figures"]["write_bw"] > 0
    commands = _commands_run(results)
    md = next(line.split()[2] for line in commands if line.startswith("mdadm --create"))
    for expected in (f"mdadm --manage {md} --fail /dev/vdc", f"mdadm --manage {md} --remove /dev/vdc",
                     f"mdadm --manage {md} --add /dev/vdf", "sysctl -w dev.raid.speed_limit_max=16384"):
        assert expected in commands, commands
    # the array's own state, sampled every second through the phases
    csv_text = (results / "runs" / run["run_id"] / "raid6" / "rebuild.csv").read_text()
    assert ",rebuilding,1,1," in csv_text and ",degraded,0,1," in csv_text
    assert vm.run("cat /proc/sys/dev/raid/speed_limit_max").output.strip() == "200000"
    assert _leftovers(vm) == ""


def test_raidz2_onto_a_disk_and_draid2_onto_its_distributed_spare(vm):
    layouts = ('[[layout]]\nname = "raidz2"\nkind = "zfs"\nvdev = "raidz2"\nashift = 12\n'
               f'devices = {json.dumps(DISKS[:5])}\nproperties = {{ primarycache = "metadata" }}\n'
               'fault = { member_runtime = "1s", fail = "/dev/vdc", replace = "/dev/vdf", fill = "192MiB" }\n'
               '[[layout]]\nname = "draid2"\nkind = "zfs"\nvdev = "draid2"\ndraid_data = 3\ndraid_spares = 1\n'
               f'ashift = 12\ndevices = {json.dumps(DISKS[:6])}\nproperties = {{ primarycache = "metadata" }}\n'
               'fault = { member_runtime = "1s", fail = "/dev/vdc", fill = "192MiB", rebuild_load = "repeat", copy_back = "/dev/vdg" }\n')
    run, results = _apply(vm, "zfs", layouts)
    for name in ("raidz2", "draid2"):
        ops = _by_state(run, name)
        assert all(ops[state]["figures"]["effective_bw"] > 0 for state in STATES), name
        rebuild = ops["rebuild"]
        assert rebuild["status"] == "complete" and rebuild["figures"]["rebuild_seconds"] > 0, rebuild
        assert rebuild["figures"]["rebuild_bytes"] > 32 * MiB  # the fill was there to rebuild
    assert "distributed" in _by_state(run, "draid2")["rebuild"]["detail"]["target"]
    commands = _commands_run(results)
    assert any(c.startswith("zpool replace bb_raidz2_") and c.endswith(" /dev/vdc /dev/vdf") for c in commands)
    assert any(c.startswith("zpool replace -s bb_draid2_") and c.endswith(" /dev/vdc draid2-0-0") for c in commands)
    # then the distributed spare's data copied back onto a real disk
    assert any(c.startswith("zpool replace bb_draid2_") and c.endswith(" /dev/vdc /dev/vdg") for c in commands)
    copied = _by_state(run, "draid2")["rebuild"]["figures"]
    assert copied["copyback_seconds"] > 0 and copied["copyback_bytes"] > 32 * MiB
    assert _leftovers(vm) == ""


def test_ctrl_c_mid_rebuild_tears_the_array_down_and_restores_the_limit(vm):
    layout = ('[[layout]]\nname = "slow"\nkind = "mdraid"\nlevel = 6\n'
              f'devices = {json.dumps(DISKS[:5])}\nfilesystem = {{ type = "xfs" }}\n'
              'fault = { member_runtime = "1s", fail = 1, replace = "/dev/vdf", speed_limit_max = "1MiB/s", rebuild_load = "none" }\n')
    folder = vm.shared / "interrupt"  # type: ignore[attr-defined]
    recipe = _recipe(folder, layout)
    results = folder / "results"
    # Start the run, wait until the journal holds the rebuild, then send what Ctrl-C sends.
    script = (f"{shlex.join(cli_argv('apply', str(recipe), '--yes', '--results', str(results)))} & pid=$!\n"
              f"for i in $(seq 600); do grep -qs '\"rebuild /dev/md' {results}/journal/*.jsonl && break; sleep 0.5; done\n"
              "sleep 3; grep -A2 recovery /proc/mdstat; kill -INT $pid; wait $pid; echo exit=$?\n")
    done = vm.run(script, timeout=1200)
    assert "recovery" in done.output and "exit=130" in done.output, done.output[-3000:]
    with sqlite3.connect(results / "results.db") as db:
        [(status,)] = db.execute("SELECT status FROM runs").fetchall()
    assert status == "interrupted"
    assert vm.run("cat /proc/sys/dev/raid/speed_limit_max").output.strip() == "200000"
    assert _leftovers(vm) == ""
