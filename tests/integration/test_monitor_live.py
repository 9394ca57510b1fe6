"""`backupbench monitor` sampling this machine's live /proc and a real block device for a second
or so (through click's test runner, and as a real process into a pipe). It reads /proc and
/sys only; the CSVs go to the test's temporary folder."""

from __future__ import annotations

import csv
import re
from datetime import datetime
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from backupbench.cli.monitor_cmd import monitor_command
from backupbench.errors import InputError
from backupbench.monitor import HostFiles, device_stack
from backupbench.monitor.metrics import DISK_METRICS
from backupbench.monitor.procfs import parse_diskstats
from backupbench.monitor.sysfs import default_devices
from host_support import run_cli

pytestmark = pytest.mark.real


@click.group()
def cli() -> None:
    pass


cli.add_command(monitor_command)


def a_real_device() -> str:
    host = HostFiles()
    try:
        names = list(parse_diskstats(host.read_text("/proc/diskstats")))
    except OSError:
        pytest.skip("no /proc/diskstats on this machine")
    devices = default_devices(host, names)
    if not devices:
        pytest.skip("no block device on this machine")
    return devices[0]


def test_monitor_for_a_duration_writes_the_csv_and_prints_averages(tmp_path):
    device = a_real_device()
    out = tmp_path / "mon.csv"
    result = CliRunner().invoke(cli, ["monitor", "--device", device, "--interval", "0.2",
                                      "--duration", "1s", "--csv", str(out)])
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(out.open()))
    assert f"{device}:w/s" in rows[0] and f"{device}:%util" in rows[0]
    assert len(rows) >= 2 and all(len(r) == len(rows[0]) for r in rows)
    assert device in result.output and "averages over" in result.output and str(out) in result.output


def test_a_directory_stands_for_the_devices_under_its_filesystem(tmp_path):
    stack = device_stack(tmp_path)
    out = tmp_path / "mon.csv"
    result = CliRunner().invoke(cli, ["monitor", "-d", str(tmp_path), "-i", "0.2", "--duration", "0.5s",
                                      "--csv", str(out)])
    if stack.empty:
        assert isinstance(result.exception, InputError)
    else:
        assert result.exit_code == 0, result.output
        assert f"{stack.top}:wMB/s" in out.read_text().splitlines()[0]


def test_count_stops_after_that_many_intervals_and_piped_output_is_plain(tmp_path):
    device = a_real_device()
    out = tmp_path / "mon.csv"
    result = CliRunner().invoke(cli, ["monitor", "-d", device, "-i", "0.2", "--count", "2", "--csv", str(out)])
    assert result.exit_code == 0, result.output
    assert len(list(csv.reader(out.open()))) == 1 + 2                # header + the 2 intervals
    assert result.output.count("Device") >= 2 and "\x1b[" not in result.output


def test_monitor_into_a_pipe_prints_one_iostat_block_per_interval():
    """The real command, its stdout a pipe (as in `backupbench monitor --count 3 | cat`)."""
    device = a_real_device()
    done = run_cli(["monitor", "-d", device, "-i", "0.2", "--count", "3"], timeout=60,
                   env={"PYTHONPATH": str(Path(__file__).parents[2] / "src")})
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout                                  # no cursor moves, no colours
    blocks = done.stdout.split("\n\n")
    assert blocks[-1] == "" and len(blocks) == 3 + 1
    for block in blocks[:3]:
        stamp, cpu_header, cpu_values, header, row = block.split("\n")  # nothing else in a block
        datetime.fromisoformat(stamp)
        assert cpu_header.startswith("avg-cpu:") and len(cpu_values.split()) == 5
        assert header.split() == ["Device", *(m.column for m in DISK_METRICS)]
        assert row.split()[0] == device and len(row.split()) == len(header.split())
        assert all(re.fullmatch(r"\d+\.\d\d", cell) for cell in row.split()[1:])
    assert "averages over" in done.stderr and "averages over" not in done.stdout
