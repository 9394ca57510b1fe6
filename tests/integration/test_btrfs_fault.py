"""A btrfs fault for real on the host (issue 13): btrfs raid1 over three loop devices the test
made, one member failed (unmounted, its superblock wiped, the rest mounted degraded) and
replaced with `btrfs replace` onto a fourth, the workloads measured in all four states; then
nothing mounted and no device carries a signature. Also: Ctrl-C before the rebuild is done
leaves nothing either."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from backupbench.results.document import phase_figures
from host_support import start_cli, write_recipe

pytestmark = [pytest.mark.real, pytest.mark.root]
STATES = ("healthy", "degraded", "rebuilding", "rebuilt")
WORKLOAD = ('\n[[workload]]\nkind = "kb2014"\noperations = ["active-full", "restore-random"]\n'
            'size = "32MiB"\nruntime = "1s"\nramp = 0\n')


def _layout(devices: list[str], fault: str) -> str:
    return (f'\n[[layout]]\nname = "mirror"\nkind = "btrfs"\ndata = "raid1"\nmetadata = "raid1"\n'
            f'devices = {json.dumps(devices)}\nfault = {fault}\n')


def _nothing_left(mount_root, devices: list[str]) -> None:
    assert str(mount_root) not in subprocess.run(["findmnt", "-rn"], capture_output=True, text=True).stdout
    for device in devices:
        probe = subprocess.run(["blkid", "-p", device], capture_output=True, text=True)
        assert probe.returncode == 2, f"{device} still carries {probe.stdout}"


def _commands(results) -> list[str]:
    [journal] = (results / "journal").glob("*.closed.jsonl")
    entries = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    return [" ".join(argv) for e in entries if e.get("event") == "done" for argv in e["action"]["do"]]


def test_btrfs_raid1_member_failed_and_replaced_through_all_four_states(cli, tmp_path, loops):
    (d0, _), (d1, _), (d2, _), (spare, _) = loops(4)
    fault = f'{{ member_runtime = "1s", fail = "{d0}", replace = "{spare}", fill = "96MiB" }}'
    recipe = write_recipe(tmp_path, [d0, d1, d2, spare], _layout([d0, d1, d2], fault), WORKLOAD)
    mount_root = tmp_path / "mnt"
    result = cli("apply", str(recipe), "--yes", "--mount-root", str(mount_root), "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    run = document["run"]
    assert run["status"] == "complete", run["error"]
    ops = {op["name"]: {**op, "figures": phase_figures(op)} for op in document["phases"]}
    for state in STATES:
        for operation in ("active-full", "restore-random"):
            op = ops[f"mirror/{state}/{operation}"]
            assert op["status"] == "complete" and op["figures"]["effective_bw"] > 0, op
    rebuild = ops["mirror/rebuild"]
    assert rebuild["status"] == "complete" and rebuild["detail"]["kind"] == "btrfs"
    # btrfs copies what the failed member held: at least the fill, mirrored onto it.
    assert rebuild["figures"]["rebuild_bytes"] >= 96 * 2**20 and rebuild["figures"]["rebuild_seconds"] > 0
    member = ops["mirror/member"]["figures"]
    assert member["read_bw"] > 0 and member["write_bw"] > 0

    commands = _commands(cli.results)
    point = next(c.split()[-1] for c in commands if c.startswith("mount ") and "degraded" not in c)
    assert f"wipefs -a {d0}" in commands and f"mount -o degraded {d1} {point}" in commands
    assert f"btrfs replace start 1 {spare} {point}" in commands
    csv_text = (cli.results / "runs" / run["id"] / "mirror" / "rebuild.csv").read_text()
    assert ",degraded,0,1," in csv_text  # the array said it was short of a member
    _nothing_left(mount_root, [d0, d1, d2, spare])

    # size rebuild --from-run: the rate measured, per disk; 1 GiB members instead of the loops'.
    sized = cli("size", "rebuild", "--from-run", run["id"], "--json")
    assert sized.returncode == 0, sized.stderr
    answer = json.loads(sized.stdout)
    [measured] = answer["measured"]
    assert measured["layout"] == "mirror" and measured["sizing_layout"] == "btrfs-raid1" and measured["disks"] == 3
    first = answer["layouts"][0]
    assert first["measured_on"] == "mirror" and first["classic"]["seconds"] > 0
    larger = json.loads(cli("size", "rebuild", "--from-run", run["id"], "--disk-size", "1GiB", "--json").stdout)
    scale = 2**30 / measured["disk_bytes"]
    assert larger["layouts"][0]["classic"]["seconds"] == pytest.approx(first["classic"]["seconds"] * scale, rel=0.01)
    shown = cli("size", "rebuild", "--from-run", run["id"])
    assert shown.returncode == 0 and "Rebuild at the rate mirror rebuilt" in shown.stdout, shown.stderr


def _degraded_under(mount_root) -> bool:
    mounts = subprocess.run(["findmnt", "-rn", "-o", "TARGET,OPTIONS"], capture_output=True, text=True).stdout
    return any(line.startswith(str(mount_root)) and "degraded" in line for line in mounts.splitlines())


def test_ctrl_c_in_the_degraded_state_leaves_nothing(cli, tmp_path, loops):
    (d0, _), (d1, _), (spare, _) = loops(3)
    # A degraded pass long enough to be stopped in: the teardown must undo the degraded mount
    # and wipe every device, the replacement too.
    workload = ('\n[[workload]]\nkind = "kb2014"\noperations = ["restore-random"]\n'
                'size = "32MiB"\nruntime = "30s"\n')
    fault = f'{{ member_runtime = "1s", fail = 1, replace = "{spare}" }}'
    recipe = write_recipe(tmp_path, [d0, d1, spare], _layout([d0, d1], fault), workload)
    mount_root = tmp_path / "mnt"
    process = start_cli(["apply", str(recipe), "--yes", "--quiet", "--mount-root", str(mount_root)], cwd=tmp_path,
                        results=cli.results, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and process.poll() is None and not _degraded_under(mount_root):
            time.sleep(0.2)
        assert _degraded_under(mount_root), "the run never reached the degraded state"
        time.sleep(2)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=180) == 130, process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    _nothing_left(mount_root, [d0, d1, spare])
    history = cli("history", "--json")
    assert json.loads(history.stdout)["runs"][0]["run"]["status"] == "interrupted"
