"""`backupbench monitor`'s refusals through click's test runner, and the rich and plain
rendering of a recorded sample. The command sampling this machine's live /proc for real:
tests/integration/test_monitor_live.py."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from rich.console import Console

from backupbench.cli.monitor_cmd import monitor_command
from backupbench.errors import InputError
from backupbench.monitor.metrics import DISK_METRICS
from backupbench.report.live import live_view, plain_block, summary_table
from backupbench.monitor.procfs import CpuTimes, LoadAvg, Memory, Snapshot, parse_diskstats
from backupbench.monitor.rates import compute_sample
from backupbench.monitor.summary import SummaryBuilder

LAB = Path(__file__).parents[1] / "fixtures" / "lab-guest"


@click.group()
def cli() -> None:
    pass


cli.add_command(monitor_command)


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
    for column in ("r/s", "w/s", "rMB/s", "wMB/s", "rrqm/s", "wrqm/s", "r_await", "w_await", "aqu-sz",
                   "rareq-sz", "wareq-sz", "%util"):
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


IOSTAT_COLUMNS = ["r/s", "w/s", "rMB/s", "wMB/s", "rrqm/s", "wrqm/s", "r_await", "w_await", "aqu-sz",
                  "rareq-sz", "wareq-sz", "%util"]


def test_plain_block_is_a_time_line_a_header_and_one_full_row_per_device():
    long_name = "nvme0n1-a-device-name-longer-than-iostat-gives"
    sample = _fixture_sample()
    block = plain_block(sample, ["dm-0", "vda", "sdq", long_name])
    time_line, cpu_header, cpu_values, *lines = block.split("\n")
    assert lines[-2:] == ["", ""] and len(lines) == 1 + 4 + 2         # header, 4 devices, blank
    assert datetime.fromisoformat(time_line).timestamp() == pytest.approx(sample.wall, abs=0.001)
    cpu = sample.cpu
    assert cpu_header.split() == ["avg-cpu:", "%user", "%system", "%iowait", "%steal", "%idle"]
    assert cpu_values.split() == [f"{v:.2f}" for v in (cpu.user, cpu.system, cpu.iowait, cpu.steal, cpu.idle)]
    lines = ["", *lines]   # the device part's lines at the indexes the checks below use
    header, *rows = [line.split() for line in lines[1:6]]
    assert header == ["Device", *IOSTAT_COLUMNS] == ["Device", *(m.column for m in DISK_METRICS)]
    assert all(len(row) == len(header) for row in rows)             # every row splits like the header
    dm0, vda, sdq, absent = (dict(zip(header, row)) for row in rows)
    assert (dm0["w/s"], dm0["wMB/s"], dm0["wareq-sz"], dm0["%util"]) == ("3200.00", "12.50", "4.00", "69.20")
    assert vda["wrqm/s"] == f"{25331 / 4:.2f}" and vda["rareq-sz"] == f"{102400 / 2 / 278:.2f}"
    assert sdq["Device"] == "sdq" and set(list(sdq.values())[1:]) == {"-"}   # not in the recording
    assert absent["Device"] == long_name                           # a long name is written whole
    assert max(len(line) for line in lines) > 120                  # and no line is cut at 80 columns
    # the figures line up under their headings, right-aligned as iostat prints them
    ends = [m.end() for m in re.finditer(r"\S+", lines[1])][1:]
    assert all([m.end() for m in re.finditer(r"\S+", line)][1:] == ends for line in lines[2:6])
