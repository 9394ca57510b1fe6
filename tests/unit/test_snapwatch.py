"""The classic-snapshot watch over `lvs` JSON: the highest Data% of each snapshot, an Invalid
snapshot flagged in the figures, and notes when one came close to full. No LVM runs here."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from backupbench.monitor.snapwatch import SnapshotWatch, parse_lvs
from backupbench.process import Result
from backupbench.report.html import operations_html
from backupbench.report.terminal import operations_tables
from backupbench.results.model import COMPLETE, VOID, OperationRecord, RunRecord
from backupbench.results.store import Store

LAB_LVS = Path(__file__).parents[1] / "fixtures" / "lab-guest" / "lvs.json"
COLUMNS = ("vg_name", "lv_name", "data_percent", "lv_attr")


def lab_row(lv: str, **changed: str) -> dict:
    """A row of the lab recording, cut to the watch's columns, with some values changed."""
    row = next(r for r in json.loads(LAB_LVS.read_text())["report"][0]["lv"] if r["lv_name"] == lv)
    return {**{k: row[k] for k in COLUMNS}, **changed}


class Lvs:
    """Answers each lvs call with the next list of rows, as lvs prints them."""

    def __init__(self, *answers: list[dict]):
        self.answers = list(answers)
        self.calls: list[list[str]] = []

    def __call__(self, argv, *, timeout, **kwargs) -> Result:
        self.calls.append(list(argv))
        return Result(list(argv), 0, json.dumps({"report": [{"lv": self.answers.pop(0)}]}), "")


def test_the_lab_snapshot_reads_as_recorded():
    (state,) = parse_lvs(json.dumps({"report": [{"lv": [lab_row("linsnap")]}]}))
    assert (state.vg, state.lv, state.data_percent, state.invalid) == ("vg0", "linsnap", 15.69, False)


def test_highest_data_percent_and_invalid_are_figures_and_a_near_full_one_a_note():
    second = lab_row("linsnap", lv_name="linsnap2")
    lvs = Lvs([lab_row("linsnap"), second],
              [lab_row("linsnap", data_percent="83.10"), {**second, "data_percent": "97.00"}],
              [lab_row("linsnap", data_percent="83.20"), {**second, "data_percent": "100.00", "lv_attr": "swi-I-s---"}])
    watch = SnapshotWatch((("vg0", "linsnap"), ("vg0", "linsnap2")), run=lvs)
    for _ in range(3):
        watch.sample()
    assert lvs.calls[0] == ["lvs", "--reportformat", "json", "-o", "vg_name,lv_name,data_percent,lv_attr",
                            "vg0/linsnap", "vg0/linsnap2"]
    assert watch.invalid == {"linsnap2"}
    assert watch.figures() == {"snapshot.linsnap.data_pct_max": 83.2, "snapshot.linsnap2.data_pct_max": 100.0,
                               "snapshot.linsnap2.invalid": 1.0}
    # the Invalid one voids the run (runner/apply.py); only the one that came close is a note
    assert watch.notes() == ["snapshot linsnap Data% reached 83.2 % (warning from 80 %)"]


def test_a_snapshot_well_below_the_thresholds_gives_no_note_and_no_invalid_flag():
    watch = SnapshotWatch((("vg0", "linsnap"),), run=Lvs([lab_row("linsnap")]))
    watch.sample()
    assert watch.figures() == {"snapshot.linsnap.data_pct_max": 15.69} and watch.notes() == []


# --- the run table: a stored run with snapshot figures ---------------------------------------

def stored_snapshot_run(tmp_path: Path) -> RunRecord:
    def op(name: str, **figures: float) -> OperationRecord:
        return OperationRecord(name=name, pattern="write qd1 512k", status=COMPLETE,
                               figures={"effective_bw": 200 * 2**20, "write_bw": 200 * 2**20, **figures})

    run = RunRecord(run_id="20261124T090000-5a9c", kind="recipe", target="snapshots", settings={}, status=VOID)
    # what runner/apply.py annotates: the same watch figures on every phase of the workload
    run.operations = [
        op("snap/active-full", **{"snapshot.snap1.data_pct_max": 41.5, "snapshot.snap2.data_pct_max": 86.4}),
        op("snap/synthetic-full", **{"snapshot.snap1.data_pct_max": 100.0, "snapshot.snap2.data_pct_max": 97.5,
                                      "snapshot.snap1.invalid": 1.0}),
        op("plain/active-full"),
    ]
    store = Store(tmp_path / "results.db")
    store.create_run(run)
    for seq, record in enumerate(run.operations):
        store.save_operation(run.run_id, seq, record)
    store.finish_run(run)
    return store.load_run(run.run_id)


def test_the_run_table_shows_the_fullest_snapshot_and_an_invalid_one(tmp_path):
    console = Console(record=True, width=250)
    for table in operations_tables(stored_snapshot_run(tmp_path)):
        console.print(table)
    lines = console.export_text().splitlines()
    assert any("snapshot Data% max" in line for line in lines)
    cells = {line.split("│")[1].strip(): line.split("│")[-2].strip() for line in lines if line.count("│") > 3}
    assert cells["snap/active-full"] == "86.4%"                        # the fuller of the two snapshots
    assert cells["snap/synthetic-full"] == "100.0% Invalid (snap1)"
    assert cells["plain/active-full"] == "-"                           # a layout without snapshots


def test_the_html_run_table_shows_the_same_cells(tmp_path):
    page = operations_html(stored_snapshot_run(tmp_path))
    assert "snapshot Data% max" in page
    assert '<span class="strong flag-bad">100.0% Invalid (snap1)</span>' in page and "86.4%" in page
