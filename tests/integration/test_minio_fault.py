"""A fault on a minio-ec layout, for real: four loop-device drives and a replacement, the
real MinIO (.tools/bin/minio) serving the s3 workload healthy, with a drive made unusable
(a read-only tmpfs over its folder), while MinIO heals the replacement, and healed. The
teardown leaves nothing mounted and no signature on any device, the replacement included."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from backupbench.results.document import phase_figures

pytestmark = [pytest.mark.real, pytest.mark.root]
LOOP_SIZE = 320 * 2**20  # XFS fits in this
STATES = ("healthy", "degraded", "rebuilding", "rebuilt")


def _recipe(tmp_path: Path, devices: list[str]) -> Path:
    drives = ", ".join(f'"{d}"' for d in devices[:4])
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(
        'name = "minio-fault"\n'
        f"devices = {json.dumps(devices)}\n"
        f'\n[[layout]]\nname = "ec"\nkind = "minio-ec"\ndevices = [{drives}]\nparity = 2\n'
        'filesystem = { type = "xfs" }\n'
        f'fault = {{ member_runtime = "1s", fail = "{devices[3]}", replace = "{devices[4]}", fill = "48MiB", rebuild_timeout = "300s" }}\n'
        '\n[[workload]]\nkind = "s3"\nobjects = 40\nobject_size = "64KiB"\nconcurrency = 4\n'
        's3_phases = ["put", "get"]\n'
    )
    return recipe


def _journal_actions(results: Path) -> list[dict]:
    [journal] = list((results / "journal").glob("*.closed.jsonl"))
    return [entry["action"] for entry in map(json.loads, journal.read_text().splitlines())
            if entry.get("event") == "done"]


def test_a_minio_drive_fails_and_is_healed_under_the_s3_workload(cli, tmp_path, loop_device):
    from s3_fixtures import require_s3_tools
    require_s3_tools()
    devices = [loop_device(f"disk{i}", LOOP_SIZE).device for i in range(5)]
    mount_root = tmp_path / "mnt"
    result = cli("apply", str(_recipe(tmp_path, devices)), "--yes", "--mount-root", str(mount_root), "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    ops = {op["name"]: {**op, "figures": phase_figures(op)} for op in document["phases"]}
    for state in STATES:
        for phase in ("put", "get"):
            assert ops[f"ec/{state}/{phase}"]["status"] == "complete", (state, phase)
            assert ops[f"ec/{state}/{phase}"]["figures"]["ops"] == 40
    rebuild = ops["ec/rebuild"]
    assert rebuild["status"] == "complete" and rebuild["figures"]["rebuild_seconds"] > 0
    assert rebuild["detail"]["errors"] == []  # every heal status was read and understood
    assert rebuild["detail"]["failed"] == [devices[3]] and rebuild["detail"]["target"] == devices[4]
    # The fill (48 MiB of objects PUT through the layout's MinIO before the failure) is healed too.
    assert rebuild["figures"]["rebuild_bytes"] >= 40 * 2**20, rebuild["figures"]

    drive = f"{mount_root}/{document['run']['id']}/ec/d4"
    commands = [command for action in _journal_actions(cli.results) for command in action["do"]]
    assert ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "backupbench-failed-drive", drive] in commands
    assert ["mount", devices[4], drive] in commands
    assert any(command[0] == "mkfs.xfs" and command[-1] == devices[4] for command in commands)

    # Torn down: nothing mounted under the test's folder, no signature on any device.
    assert str(tmp_path) not in subprocess.run(["findmnt", "-rn"], capture_output=True, text=True).stdout
    for device in devices:
        probe = subprocess.run(["blkid", "-p", device], capture_output=True, text=True)
        assert probe.returncode == 2, f"{device} still carries {probe.stdout}"
    assert list(mount_root.iterdir()) == []
    assert not list((cli.results / "journal").glob("*.open.jsonl"))
