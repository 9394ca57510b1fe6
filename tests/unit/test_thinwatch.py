"""The thin-pool watch over recorded and composed `lvs` JSON: which pools, their highest data
and metadata %, the warning/critical notes, and a full pool voiding the run. No LVM runs here."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from backupbench.errors import InputError, ProcessError
from backupbench.layouts.registry import plan_layout
from backupbench.layouts.lvm import thin_pool_vgs
from backupbench.monitor.thinwatch import LVS_COLUMNS, ThinPoolWatch, parse_thin_pools
from backupbench.monitor.thresholds import FillThresholds
from backupbench.process import Result
from backupbench.recipe import model
from backupbench.report.html import operations_html
from backupbench.report.terminal import operations_tables
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
from backupbench.results.store import Store

FIXTURES = Path(__file__).parents[1] / "fixtures"
THIN = FIXTURES / "lvs-thin"
RUN = "20261122T010000-ab12"
DEVICES = ["/dev/vda", "/dev/vdb"]


class Lvs:
    """Answers each lvs call with the next recording; remembers what it was asked."""

    def __init__(self, *names: str):
        self.texts = [(THIN / name).read_text() for name in names]
        self.calls: list[list[str]] = []

    def __call__(self, argv, *, timeout, **kwargs) -> Result:
        self.calls.append(list(argv))
        if not self.texts:
            raise AssertionError(f"lvs asked once more than recorded: {argv}")
        return Result(list(argv), 0, self.texts.pop(0), "")


def layout(spec: dict):
    recipe = model.parse({"name": "t", "devices": DEVICES, "layout": [spec], "workload": [{"kind": "kb2014"}]})
    return plan_layout(recipe.layout[0], RUN, Path("/mnt/bb"))


def test_only_thin_pools_are_read_from_the_lab_recording():
    (pool,) = parse_thin_pools((FIXTURES / "lab-guest" / "lvs.json").read_text())
    # the lab VG also holds a linear LV, a classic snapshot, the pool's hidden data LV and a thin LV
    assert (pool.vg, pool.lv, pool.data_percent, pool.metadata_percent) == ("vg0", "pool", 0.0, 10.94)
    assert pool.trouble is None


def test_the_pools_of_a_layout_are_found_in_its_plan():
    assert thin_pool_vgs(layout({"name": "thin", "kind": "lvm-thin", "devices": DEVICES,
                                 "virtual_size": "4GiB"})) == ("bb_thin_ab12",)
    assert thin_pool_vgs(layout({"name": "tsnap", "kind": "lvm-snapshot", "devices": DEVICES,
                                 "origin_size": "1GiB", "snapshots": 2, "thin": True})) == ("bb_tsnap_ab12",)
    # classic snapshots and plain LVs have no pool: no lvs call for them
    assert thin_pool_vgs(layout({"name": "snap", "kind": "lvm-snapshot", "devices": DEVICES, "origin_size": "1GiB",
                                 "snapshot_size": "256MiB"})) == ()
    assert thin_pool_vgs(layout({"name": "str", "kind": "lvm-striped", "devices": DEVICES})) == ()


def test_a_filling_pool_keeps_its_highest_figures_and_gets_notes():
    lvs = Lvs("filling-1.json", "filling-2.json", "filling-1.json")
    watch = ThinPoolWatch(("bb_thin_ab12",), run=lvs)
    for _ in range(3):
        watch.sample()
    assert lvs.calls == [["lvs", "--reportformat", "json", "-o", LVS_COLUMNS, "bb_thin_ab12"]] * 3
    assert LVS_COLUMNS == "vg_name,lv_name,data_percent,metadata_percent,lv_attr"
    # the highest of each, not the last: the pool was 86.71 % full in the middle
    assert watch.figures() == {"thinpool.pool.data_pct_max": 86.71, "thinpool.pool.metadata_pct_max": 12.40}
    assert watch.notes() == ["thin pool pool data reached 86.7 % (warning from 80 %)"]
    assert watch.void_reason("thin") is None


def test_a_full_pool_is_critical_and_voids_the_run():
    watch = ThinPoolWatch(("bb_thin_ab12",), run=Lvs("filling-2.json", "full.json"))
    watch.sample()
    watch.sample()
    assert watch.figures() == {"thinpool.pool.data_pct_max": 100.0, "thinpool.pool.metadata_pct_max": 96.09}
    assert watch.notes() == ["thin pool pool data reached 100.0 % (critical from 95 %)",
                             "thin pool pool metadata reached 96.1 % (critical from 95 %)"]
    reason = watch.void_reason("thin")
    assert reason is not None and "thin pool pool ran out of data space on thin" in reason and "void" in reason


def test_thresholds_can_be_set_and_are_checked():
    watch = ThinPoolWatch(("bb_thin_ab12",), run=Lvs("filling-1.json"), thresholds=FillThresholds(30, 40))
    watch.sample()
    assert watch.notes() == ["thin pool pool data reached 35.2 % (warning from 30 %)"]
    assert FillThresholds().level(79.99) is None and FillThresholds().level(80) == "warning"
    assert FillThresholds().level(95) == "critical"
    for warn, critical in ((0, 50), (90, 80), (80, 101)):
        with pytest.raises(InputError):
            FillThresholds(warn, critical)


def test_failed_lvs_calls_are_noted_once_with_a_count():
    def failing(argv, **kwargs):
        raise ProcessError(list(argv), 5, '  Volume group "bb_thin_ab12" not found\n')

    watch = ThinPoolWatch(("bb_thin_ab12",), run=failing)
    for _ in range(3):
        watch.sample()
    assert watch.figures() == {}
    (note,) = watch.notes()
    assert note.startswith("thin pool watch: lvs failed (exit 5)") and note.endswith("(3 times)")


def test_the_watch_samples_at_the_end_of_the_workload_and_not_without_a_pool():
    lvs = Lvs("filling-2.json")
    with ThinPoolWatch(("bb_thin_ab12",), interval_s=60.0, run=lvs) as watch:
        pass   # the workload: shorter than one interval, so only the closing sample is taken
    assert len(lvs.calls) == 1 and watch.figures()["thinpool.pool.data_pct_max"] == 86.71
    idle = Lvs()
    with ThinPoolWatch((), run=idle) as nothing:
        pass
    assert idle.calls == [] and nothing.figures() == {} and nothing.notes() == []


def test_the_run_table_shows_the_pool_figures_where_recorded(tmp_path):
    """A stored run: the thin layout's phases carry what the watch annotated, a linear layout's
    do not; the terminal table and the HTML table show the highest data and metadata %."""
    watch = ThinPoolWatch(("bb_thin_ab12",), run=Lvs("filling-1.json", "full.json"))
    watch.sample()
    watch.sample()
    run = RunRecord(run_id="20261124T090000-77aa", kind="recipe", target="thin", settings={})
    run.operations = [OperationRecord(name=name, pattern="write qd1 512k", status=COMPLETE,
                                      figures={"effective_bw": 100 * 2**20, **extra})
                      for name, extra in (("thin/active-full", watch.figures()), ("lin/active-full", {}))]
    store = Store(tmp_path / "results.db")
    store.create_run(run)
    for seq, record in enumerate(run.operations):
        store.save_operation(run.run_id, seq, record)
    stored = store.load_run(run.run_id)

    console = Console(record=True, width=250)
    for table in operations_tables(stored):
        console.print(table)
    lines = console.export_text().splitlines()
    header = next(line for line in lines if "thin pool data% max" in line)
    assert "thin pool meta% max" in header
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[-3:-1]] for line in lines
            if line.count("│") > 3}
    assert rows["thin/active-full"] == ["100.0%", "96.1%"] and rows["lin/active-full"] == ["-", "-"]
    page = operations_html(stored)
    assert "thin pool data% max" in page and '<span class="strong flag-bad">100.0%</span>' in page
