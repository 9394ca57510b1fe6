"""`backupbench monitor` through click's test runner (on the live /proc of this machine),
and the rich rendering of a sample."""

from __future__ import annotations

import csv
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from rich.console import Console

from backupbench.cli.monitor_cmd import monitor_command
from backupbench.errors import InputError
from backupbench.monitor import HostFiles, device_stack
from backupbench.report.live import live_view, summary_table
from backupbench.monitor.procfs import CpuTimes, LoadAvg, Memory, Snapshot, parse_diskstats
from backupbench.monitor.rates import compute_sample
from backupbench.monitor.summary import SummaryBuilder
from backupbench.monitor.sysfs import default_devices

LAB = Path(__file__).parents[1] / "fixtures" / "lab-guest"


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


@pytest.mark.parametrize("args,needle", [
    (["--device", "nosuchdisk0"], "nosuchdisk0"),
    (["--interval", "0.05"], "0.05"),
    (["--interval", "30"], "30"),
    (["--duration", "soon"], "soon"),
])
def test_bad_input_is_an_input_error_with_a_fix(args, needle):
    result = CliRunner().invoke(cli, ["monitor", *args])
    assert isinstance(result.exception, InputError), result.output
    assert needle in result.exception.message and result.exception.fix


def _fixture_sample():
    before = parse_diskstats((LAB / "diskstats-1.txt").read_text())
    after = parse_diskstats((LAB / "diskstats-2.txt").read_text())
    mem, load = Memory(2048000, 1024000), LoadAvg(0.5, 0.4, 0.3)
    prev = Snapshot(0.0, 1.7e9, before, CpuTimes(user=100, idle=900), mem, load)
    cur = Snapshot(4.0, 1.7e9 + 4, after, CpuTimes(user=200, idle=1700, iowait=100), mem, load)
    return compute_sample(prev, cur, ["dm-0", "vda", "sdq"], 0.0)


def test_live_view_shows_iostat_columns_and_values():
    console = Console(record=True, width=140)
    console.print(live_view(_fixture_sample(), ["dm-0", "vda", "sdq"], labels={"dm-0": "vg0-lin"}))
    text = console.export_text()
    for column in ("r/s", "w/s", "rMB/s", "wMB/s", "r_await", "w_await", "aqu-sz", "%util"):
        assert column in text
    dm0 = next(line for line in text.splitlines() if line.startswith("dm-0"))
    assert "vg0-lin" in dm0 and "3200.00" in dm0 and "12.50" in dm0 and "69.20" in dm0
    assert next(line for line in text.splitlines() if line.startswith("sdq")).split()[1] == "-"
    assert "iowait 10.0%" in text and "load 0.50" in text


def test_summary_table_lists_averages_per_device():
    builder = SummaryBuilder(["dm-0", "vda"])
    builder.add(_fixture_sample())
    console = Console(record=True, width=140)
    console.print(summary_table(builder.build(interval_s=1.0)))
    dm0 = next(line for line in console.export_text().splitlines() if line.startswith("dm-0"))
    assert "3200.0" in dm0 and "12.5" in dm0
