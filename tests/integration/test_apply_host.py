"""`plan` and `apply` for real on the host: filesystems and btrfs on loop devices the test
made; the refusals leave every device byte for byte as it was."""

from __future__ import annotations

import json
import subprocess

import pytest

from backupbench.results.document import phase_figures
from host_support import sha256, write_recipe

pytestmark = pytest.mark.real


def test_apply_xfs_ext4_and_btrfs_then_tear_down(cli, tmp_path, loops):
    (d0, f0), (d1, f1), (d2, f2) = loops(3)
    layouts = (
        f'\n[[layout]]\nname = "xfs"\nkind = "filesystem"\ndevices = ["{d0}"]\n'
        'filesystem = { type = "xfs", reflink = true, owner = "nobody", mode = "0700" }\n'
        f'\n[[layout]]\nname = "ext4"\nkind = "filesystem"\ndevices = ["{d0}"]\nfilesystem = {{ type = "ext4" }}\n'
        f'\n[[layout]]\nname = "btrfs"\nkind = "btrfs"\ndevices = ["{d1}", "{d2}"]\ndata = "raid1"\nmetadata = "raid1"\n'
    )
    recipe = write_recipe(tmp_path, [d0, d1, d2], layouts)
    mount_root = tmp_path / "mnt"
    plan = cli("plan", str(recipe), "--mount-root", str(mount_root))
    assert plan.returncode == 0, plan.stderr
    assert "mkfs.xfs -f -L" in plan.stdout and "mkfs.btrfs -f -L" in plan.stdout and "REFUSED" not in plan.stdout

    result = cli("apply", str(recipe), "--yes", "--mount-root", str(mount_root), "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    run = document["run"]
    assert run["status"] == "complete"
    names = [op["name"] for op in document["phases"]]
    assert names == [f"{layout}/{op}" for layout in ("xfs", "ext4", "btrfs") for op in ("active-full", "restore-random")]
    assert all(phase_figures(op)["effective_bw"] > 0 for op in document["phases"])
    targets = run["host"]["targets"]
    assert targets["xfs"]["fs_type"] == "xfs" and targets["ext4"]["fs_type"] == "ext4"
    assert targets["btrfs"]["fs_type"] == "btrfs"
    assert targets["xfs"]["mode"] == "0700" and targets["xfs"]["owner_uid"] == 65534  # nobody
    run_dir = cli.results / "runs" / run["id"]
    assert (run_dir / "btrfs" / "active-full.json").exists()

    # Torn down: nothing mounted, no signature left, journals closed.
    assert str(mount_root) not in subprocess.run(["findmnt", "-rn"], capture_output=True, text=True).stdout
    assert list(mount_root.iterdir()) == []  # not even the run's folder of mount points
    for device in (d0, d1, d2):
        probe = subprocess.run(["blkid", "-p", device], capture_output=True, text=True)
        assert probe.returncode == 2, f"{device} still carries {probe.stdout}"
    assert not list((cli.results / "journal").glob("*.open.jsonl"))
    assert list((cli.results / "journal").glob("*.closed.jsonl"))
    shown = cli("show", run["id"])
    assert "Layouts compared" in shown.stdout


def test_apply_refuses_without_yes_and_touches_nothing(cli, tmp_path, loops):
    [(device, backing)] = loops(1)
    recipe = write_recipe(tmp_path, [device], f'\n[[layout]]\nname = "x"\nkind = "filesystem"\ndevices = ["{device}"]\n')
    before = sha256(backing)
    result = cli("apply", str(recipe), "--mount-root", str(tmp_path / "mnt"))
    assert result.returncode == 3 and "--yes" in result.stderr and "Traceback" not in result.stderr
    assert sha256(backing) == before


def test_a_device_holding_a_filesystem_is_refused_unchanged(cli, tmp_path, loops):
    [(device, backing)] = loops(1)
    subprocess.run(["mkfs.ext4", "-q", "-F", device], check=True, capture_output=True)
    recipe = write_recipe(tmp_path, [device], f'\n[[layout]]\nname = "x"\nkind = "filesystem"\ndevices = ["{device}"]\n')
    before = sha256(backing)
    plan = cli("plan", str(recipe), "--mount-root", str(tmp_path / "mnt"))
    assert plan.returncode == 3 and "REFUSED" in plan.stdout and "ext4" in plan.stdout
    result = cli("apply", str(recipe), "--yes", "--mount-root", str(tmp_path / "mnt"))
    assert result.returncode == 3 and "ext4" in result.stderr
    assert sha256(backing) == before


def test_minio_erasure_and_minio_on_a_filesystem_measured_with_s3(cli, tmp_path, loops):
    from s3_fixtures import require_s3_tools
    require_s3_tools()
    devices = loops(5)
    paths = [d for d, _ in devices]
    drives = ", ".join(f'"{p}"' for p in paths[:4])
    layouts = (
        f'\n[[layout]]\nname = "ec"\nkind = "minio-ec"\ndevices = [{drives}]\nparity = 2\n'
        'filesystem = { type = "xfs" }\n'
        f'\n[[layout]]\nname = "single"\nkind = "filesystem"\ndevices = ["{paths[4]}"]\nminio = true\n'
        'filesystem = { type = "ext4" }\n'
    )
    workload = '\n[[workload]]\nkind = "s3"\nobjects = 30\nobject_size = "64KiB"\nconcurrency = 4\n'
    recipe = write_recipe(tmp_path, paths, layouts, workload)
    result = cli("apply", str(recipe), "--yes", "--mount-root", str(tmp_path / "mnt"), "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    ops = {op["name"]: phase_figures(op) for op in document["phases"]}
    assert set(ops) == {f"{layout}/{phase}" for layout in ("ec", "single") for phase in ("put", "get", "delete")}
    assert ops["ec/put"]["ops"] == 30 and ops["single/get"]["ops"] == 30
    assert (cli.results / "runs" / document["run"]["id"] / "ec.minio.log").exists()
    for device in paths:
        assert subprocess.run(["blkid", "-p", device], capture_output=True).returncode == 2
    assert str(tmp_path / "mnt") not in subprocess.run(["findmnt", "-rn"], capture_output=True, text=True).stdout
