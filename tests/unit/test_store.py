from contextlib import closing

import pytest

from backupbench.analysis.windows import backup_windows, restore_range
from backupbench.errors import NotFoundError
from backupbench.results.model import COMPLETE, INTERRUPTED, OperationRecord, RunRecord
from backupbench.results.store import SCHEMA_VERSION, Store


def make_run(run_id, started="2026-11-22T00:00:00+00:00"):
    return RunRecord(run_id=run_id, kind="kb2014", target="/srv", settings={"size": 1}, started_at=started)


def test_round_trip(tmp_path):
    store = Store(tmp_path / "results.db")
    run = make_run("20261122T000000-aaaa")
    store.create_run(run)
    op = OperationRecord(name="active-full", pattern="write qd1", status=COMPLETE,
                         figures={"write_bw": 100.0, "effective_bw": 100.0}, detail={"raw": "active-full.json"})
    store.save_operation(run.run_id, 0, op)
    run.status, run.notes = INTERRUPTED, ["a note"]
    store.finish_run(run)
    loaded = store.load_run("20261122T000000")
    assert loaded.status == INTERRUPTED and loaded.notes == ["a note"]
    assert loaded.operations[0].figures == {"write_bw": 100.0, "effective_bw": 100.0}
    assert loaded.operations[0].detail == {"raw": "active-full.json"}


def test_resolve_latest_prefix_and_ambiguity(tmp_path):
    store = Store(tmp_path / "results.db")
    store.create_run(make_run("20261122T000000-aaaa", "2026-11-22T00:00:00+00:00"))
    store.create_run(make_run("20261122T000001-bbbb", "2026-11-22T00:00:01+00:00"))
    assert store.resolve_id("latest") == "20261122T000001-bbbb"
    with pytest.raises(NotFoundError, match="matches 2 runs"):
        store.resolve_id("20261122")
    with pytest.raises(NotFoundError):
        store.resolve_id("nope")
    assert [r.run_id for r in store.list_runs()] == ["20261122T000001-bbbb", "20261122T000000-aaaa"]


def test_empty_store_has_no_latest(tmp_path):
    with pytest.raises(NotFoundError, match="no runs"):
        Store(tmp_path / "results.db").resolve_id("latest")


def test_windows_and_restore_range():
    run = make_run("r")
    mib = 2**20
    for name, speed in (("active-full", 100 * mib), ("synthetic-full", 50 * mib),
                        ("restore-sequential", 200 * mib), ("restore-random", 20 * mib)):
        run.operations.append(OperationRecord(name=name, pattern="", status=COMPLETE, figures={"effective_bw": speed}))
    run.operations.append(OperationRecord(name="reverse-incremental", pattern="", status=INTERRUPTED, figures={}))
    assert restore_range(run).worst_bps == 20 * mib and restore_range(run).best_bps == 200 * mib
    windows = {w.operation: w.seconds for w in backup_windows(run, 10 * 2**40)}
    assert windows["active-full"] == pytest.approx(10 * 2**40 / (100 * mib))
    assert windows["synthetic-full"] == pytest.approx(2 * windows["active-full"])
    assert "reverse-incremental" not in windows


def test_layout_matrix_compares_layouts_phase_by_phase():
    from backupbench.analysis.compare import layout_matrix

    run = make_run("r")
    mib = 2**20
    for layout, speed in (("linear", 50 * mib), ("striped", 200 * mib)):
        run.operations.append(OperationRecord(name=f"{layout}/active-full", pattern="", status=COMPLETE,
                                              figures={"effective_bw": speed}, layout=layout))
    matrix = layout_matrix(run)
    assert matrix.layouts == ("linear", "striped") and matrix.phases == ("active-full",)
    assert matrix.ratio("active-full", "striped") == 4.0
    assert layout_matrix(make_run("single")) is None


def test_restore_range_and_first_write_penalty_per_layout_of_a_recipe_run():
    from backupbench.analysis.compare import first_write_penalty
    from backupbench.analysis.windows import layouts_of

    run = make_run("recipe")
    mib = 2**20
    for layout, speeds in (("thick", (100, 100, 300, 30)), ("thin", (40, 100, 280, 25))):
        for phase, speed in zip(("first-write", "overwrite", "restore-sequential", "restore-random"), speeds):
            run.operations.append(OperationRecord(name=f"{layout}/{phase}", pattern="", status=COMPLETE,
                                                  figures={"effective_bw": speed * mib}, layout=layout))
    assert layouts_of(run) == ["thick", "thin"]
    assert first_write_penalty(run, "thick") == 1.0 and first_write_penalty(run, "thin") == 2.5
    assert restore_range(run, "thin").worst_bps == 25 * mib
    assert [w.operation for w in backup_windows(run, 2**40, "thick")] == ["restore-sequential", "restore-random"]
    assert restore_range(run) is None  # no plain (layout-less) phases in a recipe run


def test_a_running_run_whose_process_is_gone_reads_back_interrupted(tmp_path):
    alive = {"boot 10 100": True}
    store = Store(tmp_path / "results.db", alive=lambda owner: alive.get(owner, False))
    live, dead, legacy = make_run("20261122T000000-live"), make_run("20261122T000001-dead"), make_run("20261122T000002-old")
    live.owner, dead.owner = "boot 10 100", "boot 11 100"
    for run in (live, dead, legacy):
        store.create_run(run)
    store.save_operation(dead.run_id, 0, OperationRecord(name="active-full", pattern="", status="running"))
    assert store.load_run(live.run_id).status == "running"
    gone = store.load_run(dead.run_id)
    assert gone.status == INTERRUPTED and gone.operations[0].status == INTERRUPTED
    assert store.load_run(legacy.run_id).status == INTERRUPTED  # no owner recorded: nobody runs it
    assert {r.run_id: r.status for r in store.list_runs()}[dead.run_id] == INTERRUPTED


def test_mark_interrupted_and_the_schema_1_store_gains_the_owner_column(tmp_path):
    import sqlite3
    path = tmp_path / "results.db"
    with sqlite3.connect(path) as db:  # a store as version 0.1 wrote it
        db.executescript("""CREATE TABLE runs (run_id TEXT PRIMARY KEY, kind TEXT NOT NULL, target TEXT NOT NULL,
            status TEXT NOT NULL, started_at TEXT NOT NULL, finished_at TEXT, settings_json TEXT NOT NULL,
            host_json TEXT NOT NULL, notes_json TEXT NOT NULL DEFAULT '[]', error TEXT);
            INSERT INTO runs VALUES ('r1', 'kb2014', '/srv', 'complete', '2026', NULL, '{}', '{}', '[]', NULL);
            PRAGMA user_version = 1;""")
    store = Store(path)
    assert store.load_run("r1").status == COMPLETE and store.load_run("r1").owner == ""
    assert store.mark_interrupted("r1", "late signal") is False  # only running runs, unless asked
    assert store.mark_interrupted("r1", "late signal", if_status=(COMPLETE,)) is True
    run = store.load_run("r1")
    assert run.status == INTERRUPTED and run.notes == ["late signal"]


def test_a_store_whose_creation_was_cut_short_opens(tmp_path):
    import sqlite3
    empty = tmp_path / "empty" / "results.db"  # connected, nothing written
    empty.parent.mkdir()
    sqlite3.connect(empty).close()
    assert Store(empty).list_runs() == []
    unstamped = tmp_path / "unstamped" / "results.db"  # tables made, version never stamped
    Store(unstamped)
    with closing(sqlite3.connect(unstamped)) as db:
        db.execute("PRAGMA user_version = 0")
    reopened = Store(unstamped)
    assert reopened.list_runs() == []
    with closing(sqlite3.connect(unstamped)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_label_refers_to_its_run_and_an_id_wins_over_a_label(tmp_path):
    store = Store(tmp_path / "results.db")
    store.create_run(make_run("20261122T000000-aaaa", "2026-11-22T00:00:00+00:00"))
    store.create_run(make_run("20261122T000001-bbbb", "2026-11-22T00:00:01+00:00"))
    store.create_run(make_run("20261122T000002-cccc", "2026-11-22T00:00:02+00:00"))
    store.set_label("20261122T000000-aaaa", "rep3")
    store.set_label("20261122T000001-bbbb", "20261122T000002-cccc")  # a label spelt like another run's id
    assert store.resolve_id("rep3") == "20261122T000000-aaaa"
    assert store.load_run("rep3").run_id == "20261122T000000-aaaa"
    assert store.resolve_id("20261122T000002-cccc") == "20261122T000002-cccc"
    store.set_label("20261122T000002-cccc", "rep3")
    with pytest.raises(NotFoundError) as caught:
        store.resolve_id("rep3")
    assert "label 'rep3' names 2 runs: 20261122T000000-aaaa, 20261122T000002-cccc" in str(caught.value)
    assert "\n" not in str(caught.value)
    with pytest.raises(NotFoundError, match="no run 'rep4'"):
        store.resolve_id("rep4")
