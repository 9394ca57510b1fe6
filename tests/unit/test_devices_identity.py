"""`backupbench devices` says what each device is: size, ROTA, model, serial and transport as
lsblk reports them, in the table and in --json. Pure tests over recorded and composed lsblk
output, and one real run on a loop device the test makes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from backupbench import process, units
from backupbench.cli.devices_cmd import IDENTITY_COLUMNS, DeviceProbe, devices_command
from backupbench.devices.blockfacts import BlockFacts
from backupbench.devices.probe_parse import parse_lsblk_json
from backupbench.report.devices import devices_table, row_json

from host_support import require_tools, run_cli
from blockdev_support import small_machine

FIXTURES = Path(__file__).parents[1] / "fixtures" / "devices"
SRC = Path(__file__).parents[2] / "src"

# Composed in the shape lsblk 2.38 prints (the host the tests run on has only a virtio disk):
# a SATA disk, an NVMe drive, a USB stick whose model an older lsblk padded with blanks and
# whose ROTA came as a string, as lsblk before 2.33 printed it.
COMPOSED = json.dumps({"blockdevices": [
    {"kname": "vdb", "size": 8 * units.GiB, "rota": True, "model": "ST8000VN004-2M2101", "serial": "WSD0A1B2",
     "tran": "sata"},
    {"kname": "vdc", "size": 8 * units.GiB, "rota": False, "model": "Samsung SSD 980 PRO 1TB",
     "serial": "S5GXNF0R123456A", "tran": "nvme",
     "children": [{"kname": "vdc1", "size": units.GiB, "rota": False, "model": None, "serial": None, "tran": "nvme"}]},
    {"kname": "vdd", "size": 2 * units.GiB, "rota": "1", "model": "Cruzer Blade    ", "serial": " 4C530001 ",
     "tran": "usb"},
]})


def test_recorded_host_output_has_no_model_serial_or_transport_for_a_virtio_disk():
    devices = {d.kname: d for d in parse_lsblk_json((FIXTURES / "lsblk-identity-host.json").read_text())}
    vda, zram = devices["vda"], devices["zram0"]
    assert (vda.size_bytes, vda.rotational, vda.model, vda.serial, vda.transport) == (
        274877906944, True, None, None, None)
    assert zram.rotational is False and zram.size_bytes == 0


def test_model_serial_and_transport_are_read_and_blank_padding_dropped():
    devices = {d.kname: d for d in parse_lsblk_json(COMPOSED)}
    assert (devices["vdb"].model, devices["vdb"].serial, devices["vdb"].transport) == (
        "ST8000VN004-2M2101", "WSD0A1B2", "sata")
    assert (devices["vdc"].rotational, devices["vdc"].transport) == (False, "nvme")
    assert (devices["vdc1"].parent, devices["vdc1"].model, devices["vdc1"].transport) == ("vdc", None, "nvme")
    assert (devices["vdd"].model, devices["vdd"].serial, devices["vdd"].rotational) == ("Cruzer Blade", "4C530001", True)


def test_table_and_json_rows_show_what_lsblk_says():
    identities = {d.kname: d for d in parse_lsblk_json(COMPOSED)}
    facts = BlockFacts(path="/dev/vdc", resolved="/dev/vdc", is_symlink=False, exists=True, is_block=True,
                       file_kind="block device", kernel_name="vdc", type="disk", size_bytes=8 * units.GiB,
                       rotational=False)
    row = row_json(facts, [], identities["vdc"])
    assert row["lsblk"] == {"size_bytes": 8 * units.GiB, "rotational": False, "model": "Samsung SSD 980 PRO 1TB",
                            "serial": "S5GXNF0R123456A", "transport": "nvme"}
    assert row_json(facts, [])["lsblk"] is None
    console = Console(record=True, width=200)
    console.print(devices_table([(facts, [])], {}, identities))
    text = console.export_text()
    header = next(line for line in text.splitlines() if "Device" in line)
    assert [h.strip() for h in header.strip("┃ ").split("┃")][:7] == [
        "Device", "Type", "Size", "ROTA", "TRAN", "Model", "Serial"]
    line = next(line for line in text.splitlines() if "/dev/vdc" in line)
    cells = [c.strip() for c in line.strip("│ ").split("│")]
    assert cells[:7] == ["/dev/vdc", "disk", "8 GiB", "0", "nvme", "Samsung SSD 980 PRO 1TB", "S5GXNF0R123456A"]


def _with_identities(runner, text: str):
    """The recorded machine's runner, answering the identity lsblk with `text`."""
    def run(argv, **kwargs):
        if argv[0] == "lsblk" and IDENTITY_COLUMNS in argv:
            return process.Result(list(argv), 0, text, "")
        return runner(argv, **kwargs)
    return run


def test_devices_command_lists_identity_in_the_table_and_json(tmp_path):
    host, runner = small_machine(tmp_path)
    probe = DeviceProbe(run=_with_identities(runner, COMPOSED), host=host)
    result = CliRunner().invoke(devices_command, ["vdb", "vdd", "--json"], obj=probe)
    assert result.exit_code == 3, result.output          # vdd is in use as swap
    rows = {row["path"]: row for row in json.loads(result.output)["devices"]}
    assert rows["/dev/vdb"]["lsblk"] == {"size_bytes": 8 * units.GiB, "rotational": True,
                                         "model": "ST8000VN004-2M2101", "serial": "WSD0A1B2", "transport": "sata"}
    assert rows["/dev/vdd"]["lsblk"]["transport"] == "usb" and rows["/dev/vdd"]["verdict"] == "refused"
    table = CliRunner().invoke(devices_command, [], obj=probe)
    assert table.exit_code == 0, table.output
    vdb = next(line for line in table.output.splitlines() if "/dev/vdb" in line)
    assert "sata" in vdb and "ST8000VN004-2M2101" in vdb and "WSD0A1B2" in vdb and "8 GiB" in vdb
    # a device lsblk's identity answer does not list keeps empty cells, and is still judged
    vda1 = next(line for line in table.output.splitlines() if "/dev/vda1" in line)
    assert "refused" in vda1 and "sata" not in vda1


def test_an_lsblk_that_fails_leaves_blank_cells_and_refuses_nothing_more(tmp_path):
    host, runner = small_machine(tmp_path)

    def broken(argv, **kwargs):
        if argv[0] == "lsblk" and IDENTITY_COLUMNS in argv:
            return process.Result(list(argv), 1, "", "lsblk: unknown column: TRAN")
        return runner(argv, **kwargs)

    plain = CliRunner().invoke(devices_command, ["vdb", "--json"], obj=DeviceProbe(run=runner, host=host))
    failed = CliRunner().invoke(devices_command, ["vdb", "--json"], obj=DeviceProbe(run=broken, host=host))
    assert failed.exit_code == plain.exit_code == 0, failed.output
    (row,) = json.loads(failed.output)["devices"]
    assert row["lsblk"] is None and row["verdict"] == "usable"


@pytest.mark.real
def test_devices_on_a_real_loop_device(loop_device):
    """The real command, lsblk and all, on a 48 MiB loop device on the test's own file."""
    require_tools("lsblk", "wipefs")
    loop = loop_device("identity", 48 * 2**20)
    done = run_cli(["devices", "--json", loop.device], env={"PYTHONPATH": str(SRC)}, timeout=120)
    assert done.returncode in (0, 3), done.stderr
    (row,) = json.loads(done.stdout)["devices"]
    rotational = Path(f"/sys/block/{loop.name}/queue/rotational").read_text().strip() == "1"
    # a loop device has no model, serial or transport; its size and ROTA are the kernel's
    assert row["lsblk"] == {"size_bytes": 48 * 2**20, "rotational": rotational, "model": None, "serial": None,
                            "transport": None}
    assert row["facts"]["size_bytes"] == 48 * 2**20 and row["facts"]["type"] == "loop"
    table = run_cli(["devices", loop.device], env={"PYTHONPATH": str(SRC)}, timeout=120)
    assert table.returncode in (0, 3), table.stderr
    assert all(h in table.stdout for h in ("ROTA", "TRAN", "Model", "Serial"))
    line = next(line for line in table.stdout.splitlines() if loop.device in line)
    assert "48 MiB" in line and f"│ {int(rotational)} " in line
