"""The versioned result document (results/document.py), its shipped JSON Schemas, the error
document, and the store's schema: versions, the label column, and a migration from version 2."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import pytest
from jsonschema import Draft202012Validator

from backupbench.cli.app import main
from backupbench.monitor.metrics import DISK_METRICS, disk_key
from backupbench.results import document
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord, known_unit, split_device, stored_name
from backupbench.results.store import SCHEMA_VERSION, Store

MiB = 2**20


def validator(kind: str) -> Draft202012Validator:
    """The shipped schema of `kind`: self-contained, it needs no other file."""
    return Draft202012Validator(document.schema(kind.removeprefix(document.KIND_PREFIX)))


def assert_valid(data: dict) -> None:
    errors = sorted(validator(data["kind"]).iter_errors(data), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]


def sample_run(run_id: str = "20261122T000000-aaaa", label: str = "raid6, before") -> RunRecord:
    run = RunRecord(run_id=run_id, kind="kb2014", target="/srv/repo", settings={"size": 1, "backup_size": 2**40},
                    host={"kernel": "6.1"}, status=COMPLETE, finished_at="2026-11-22T00:01:00+00:00",
                    started_at="2026-11-22T00:00:00+00:00", label=label)
    for name, speed in (("active-full", 100 * MiB), ("restore-sequential", 200 * MiB), ("restore-random", 20 * MiB)):
        run.operations.append(OperationRecord(
            name=name, pattern="write qd1", status=COMPLETE, finished_at="2026-11-22T00:00:30+00:00",
            figures={"effective_bw": speed, "read_p99_lat": 1_500_000.0, "mon.vda.w_await.p95": 4.5,
                     "mon.cpu_iowait.avg": 12.5, "mon.mem_used_MiB.max": 900.0, "clone_calls": 3.0},
            units={"mon.vda.w_await.p95": "ms", "mon.cpu_iowait.avg": "%", "mon.mem_used_MiB.max": "MiB"},
            detail={"raw": f"{name}.json"}))
    return run


def test_every_shipped_schema_is_draft_2020_12_and_named_after_its_kind():
    names = document.schema_names()
    assert {"run", "history", "error", "plan", "devices", "hosts.check", "size.capacity", "size.rebuild",
            "size.snapshot", "size.window"} <= set(names)
    for name in names:
        schema = document.schema(name)
        Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["properties"]["kind"]["const"] == f"backupbench.{name}"
        assert schema["properties"]["schema_version"]["const"] == document.SCHEMA_VERSION


@pytest.mark.parametrize("stored, figure, device", [
    ("mon.vda.w_await.p95", "mon.w_await.p95", "vda"),
    ("mon.nvme0n1.util.avg", "mon.util.avg", "nvme0n1"),
    ("mon.dm-0.r_s.max", "mon.r_s.max", "dm-0"),
    ("mon.cpu_iowait.avg", "mon.cpu_iowait.avg", None),
    ("mon.load1.p95", "mon.load1.p95", None),
    ("snapshot.snap1.data_pct_max", "snapshot.data_pct_max", "snap1"),
    ("snapshot.snap1.invalid", "snapshot.invalid", "snap1"),
    ("thinpool.pool0.metadata_pct_max", "thinpool.metadata_pct_max", "pool0"),
    ("effective_bw", "effective_bw", None),
    ("zfs.arc_hit", "zfs.arc_hit", None),
])
def test_the_device_is_split_out_of_a_figure_name_and_put_back(stored, figure, device):
    assert split_device(stored) == (figure, device)
    assert stored_name(figure, device) == stored


def test_every_disk_metric_the_monitor_keys_has_its_device_split_out():
    for metric in DISK_METRICS:
        for stat in ("avg", "p95", "max"):
            stored = f"mon.{disk_key('sdb', metric)}.{stat}"
            assert split_device(stored) == (f"mon.{metric.key}.{stat}", "sdb"), stored


def test_the_layout_watchers_figures_have_their_volume_split_out():
    from backupbench.monitor.snapwatch import SnapshotWatch
    from backupbench.monitor.thinwatch import ThinPoolWatch

    # What the watchers saw, as their samples leave it (no lvs is run).
    snapshots = SnapshotWatch(snapshots=(("vg0", "snap1"),), max_percent={"snap1": 40.0}, invalid={"snap1"})
    pools = ThinPoolWatch(vgs=("vg0",), data_max={"pool0": 70.0}, metadata_max={"pool0": 5.0})
    figures = {**snapshots.figures(), **pools.figures()}
    assert {split_device(name) for name in figures} == {
        ("snapshot.data_pct_max", "snap1"), ("snapshot.invalid", "snap1"),
        ("thinpool.data_pct_max", "pool0"), ("thinpool.metadata_pct_max", "pool0")}
    assert {known_unit(name) for name in figures} == {"%", "1"}


def test_well_known_units_cover_prefixed_and_per_device_names():
    assert known_unit("put_lat_p99_ns") == "ns" and known_unit("get_effective_bw") == "B/s"
    assert known_unit("snapshot.snap1.data_pct_max") == "%" and known_unit("files_per_s") == "files/s"
    assert known_unit("mystery_figure") == "" and known_unit("put_mystery") == ""


def test_run_document_names_every_unit_and_takes_devices_out_of_names():
    data = document.run_document(sample_run())
    assert_valid(data)
    assert (data["schema_version"], data["kind"]) == ("1", "backupbench.run")
    assert data["backupbench_version"] and data["run"]["label"] == "raid6, before"
    figures = {(f["name"], f.get("device")): f for f in data["phases"][0]["figures"]}
    assert figures[("effective_bw", None)] == {"name": "effective_bw", "value": 100.0 * MiB, "unit": "B/s"}
    assert figures[("read_p99_lat", None)]["unit"] == "ns"  # as stored: no conversion, unit named
    assert figures[("mon.w_await.p95", "vda")] == {"name": "mon.w_await.p95", "device": "vda", "value": 4.5,
                                                   "unit": "ms"}
    assert figures[("mon.cpu_iowait.avg", None)]["unit"] == "%"
    assert figures[("clone_calls", None)]["unit"] == document.DIMENSIONLESS  # stored without a unit
    assert not any("vda" in f["name"] for f in data["phases"][0]["figures"])
    assert data["windows"] is None and data["baseline"] is None and data["restore_ranges"] == []


def test_run_document_carries_windows_restore_ranges_and_the_baseline():
    run, baseline = sample_run(), sample_run("20261121T000000-bbbb", label="")
    analysis = document.Analysis(
        backup_size=2**40, windows=(document.Window(None, "active-full", "Active full", 2**40 / (100 * MiB)),),
        restore_ranges=(document.RestoreRange(None, sequential_bps=200 * MiB, random_bps=20 * MiB),),
        baseline=baseline)
    data = document.run_document(run, analysis)
    assert_valid(data)
    assert data["windows"] == {"backup_size": 2**40, "size_unit": "B", "items": [
        {"layout": None, "phase": "active-full", "job": "Active full", "duration": 10485.76, "unit": "s"}]}
    assert data["restore_ranges"] == [{"layout": None, "low": 20 * MiB, "high": 200 * MiB,
                                       "sequential": 200 * MiB, "random": 20 * MiB, "unit": "B/s"}]
    assert data["baseline"]["run"]["id"] == "20261121T000000-bbbb"
    assert [p["name"] for p in data["baseline"]["phases"]] == ["active-full", "restore-sequential", "restore-random"]


def test_a_document_that_breaks_its_schema_is_caught():
    data = document.run_document(sample_run())
    data["phases"][0]["figures"][0]["unit"] = ""
    del data["run"]["label"]
    assert len(list(validator("run").iter_errors(data))) == 2


def test_a_payload_cannot_overwrite_the_header():
    with pytest.raises(ValueError, match="kind"):
        document.envelope("plan", {"kind": "mine"})


def test_error_document_for_a_failed_json_command(tmp_path, capsys):
    Store(tmp_path / "results.db")  # a store without that run
    code = main(["show", "nope", "--json", "--results", str(tmp_path)])
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert_valid(data)
    assert code == 2 and data["exit_code"] == 2 and data["kind"] == "backupbench.error"
    assert data["error"] == f"no run 'nope' in {tmp_path / 'results.db'}"
    assert data["fix"] == "see `backupbench history` for run ids and labels"
    assert err.startswith("backupbench: no run 'nope'")  # the one line on stderr stays


def test_a_usage_error_with_json_is_a_document_too_and_without_json_stdout_stays_empty(tmp_path, capsys):
    code = main(["history", "--json", "--limit", "0", "--results", str(tmp_path)])
    data = json.loads(capsys.readouterr().out)
    assert_valid(data)
    assert code == 2 and data["exit_code"] == 2 and "--limit" in data["error"]
    assert data["fix"] == "see `backupbench history --help`"
    assert main(["show", "nope", "--results", str(tmp_path)]) == 2
    assert capsys.readouterr().out == ""
    # After `--`, --json is a path, not the flag.
    assert main(["show", "--results", str(tmp_path), "--", "--json"]) == 2
    assert capsys.readouterr().out == ""


# The store as backupbench wrote it at schema version 2, before runs.label.
VERSION_2_SQL = """
CREATE TABLE runs (run_id TEXT PRIMARY KEY, kind TEXT NOT NULL, target TEXT NOT NULL, status TEXT NOT NULL,
    started_at TEXT NOT NULL, finished_at TEXT, settings_json TEXT NOT NULL, host_json TEXT NOT NULL,
    notes_json TEXT NOT NULL DEFAULT '[]', error TEXT, owner TEXT NOT NULL DEFAULT '');
CREATE TABLE operations (run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, seq INTEGER NOT NULL,
    name TEXT NOT NULL, pattern TEXT NOT NULL, status TEXT NOT NULL, started_at TEXT NOT NULL, finished_at TEXT,
    detail_json TEXT NOT NULL DEFAULT '{}', PRIMARY KEY (run_id, name));
CREATE TABLE figures (run_id TEXT NOT NULL, operation TEXT NOT NULL, name TEXT NOT NULL, value REAL NOT NULL,
    unit TEXT NOT NULL, PRIMARY KEY (run_id, operation, name),
    FOREIGN KEY (run_id, operation) REFERENCES operations(run_id, name) ON DELETE CASCADE);
INSERT INTO runs VALUES ('r2', 'smallfiles', '/srv', 'complete', '2026-01-01T00:00:00+00:00', NULL, '{}', '{}',
    '[]', NULL, 'boot 1 2');
INSERT INTO operations VALUES ('r2', 0, 'create', 'create', 'complete', '2026-01-01T00:00:00+00:00', NULL, '{}');
INSERT INTO figures VALUES ('r2', 'create', 'files_per_s', 1234.5, '');
INSERT INTO figures VALUES ('r2', 'create', 'mon.sda.util.avg', 50.0, '%');
PRAGMA user_version = 2;
"""


def test_a_version_2_store_opens_gains_labels_and_keeps_its_runs(tmp_path):
    path = tmp_path / "results.db"
    with closing(sqlite3.connect(path)) as db:
        db.executescript(VERSION_2_SQL)
    store = Store(path)
    old = store.load_run("r2")
    assert (old.label, old.owner, old.operations[0].figures) == ("", "boot 1 2", {"files_per_s": 1234.5,
                                                                                 "mon.sda.util.avg": 50.0})
    # A unit the old store left empty is named in the document now (files_per_s is well known).
    figures = {f["name"]: f for f in document.run_document(old)["phases"][0]["figures"]}
    assert figures["files_per_s"]["unit"] == "files/s" and figures["mon.util.avg"]["device"] == "sda"
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5
        assert "label" in {row[1] for row in db.execute("PRAGMA table_info(runs)")}
        assert {row[1] for row in db.execute("PRAGMA table_info(samples)")} >= {"sample", "host", "name", "value"}
    assert old.operations[0].samples == []  # measured once, as every run before version 4
    store.set_label("r2", "old disks")
    store.create_run(sample_run("r3", label="new disks"))
    assert [(r.run_id, r.label) for r in Store(path).list_runs()] == [("r3", "new disks"), ("r2", "old disks")]


def test_a_store_from_a_newer_backupbench_is_refused(tmp_path):
    from backupbench.errors import StoreError

    path = tmp_path / "results.db"
    with closing(sqlite3.connect(path)) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer backupbench"):
        Store(path)


def test_show_export_and_baseline_take_a_label_where_they_take_a_run_id(tmp_path, capsys):
    store = Store(tmp_path / "results.db")
    for run_id, label, second in (("20261122T000000-aaaa", "rep3", "00"), ("20261122T000100-bbbb", "rep4", "01")):
        run = sample_run(run_id, label)
        run.started_at = f"2026-11-22T00:{second}:00+00:00"
        store.create_run(run)
        for seq, op in enumerate(run.operations):
            store.save_operation(run_id, seq, op)
        store.finish_run(run)
    assert main(["show", "rep4", "--baseline", "rep3", "--json", "--results", str(tmp_path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["run"]["id"] == "20261122T000100-bbbb"
    assert data["baseline"]["run"]["id"] == "20261122T000000-aaaa"
    assert main(["export", "--prometheus", "rep3", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert 'run_id="20261122T000000-aaaa"' in out and "20261122T000100-bbbb" not in out


# A phase of a version-4 store: the pipeline's own facts were keys of detail_json.
VERSION_4_DETAIL = {
    "layout": "striped", "job_file": "active-full.fio", "monitor_csv": "striped/sample-2/active-full.monitor.csv",
    "monitor_csv_samples": ["striped/sample-1/active-full.monitor.csv", "striped/sample-2/active-full.monitor.csv"],
    "monitor": {"samples": 9, "devices": ["vda"], "warnings": [], "notes": [], "errors": [], "left_out": 2},
    "monitor_crossings": [{"device": "", "metric": "load1", "count": 3, "worst": 3.0}],
    "cached": "the disks saw 5%", "cached_samples": 1, "cache_checked_samples": 2,
    "hosts": {"a": {"effective_bw": 150.0}, "b": {"effective_bw": 90.0}},
    "host_samples": [{"a": {"effective_bw": 100.0}, "b": {"effective_bw": 80.0}},
                     {"a": {"effective_bw": 200.0}, "b": {"effective_bw": 100.0}}],
    "lost_hosts": {"c": "connection refused"}, "p99_total": "merged",
}


def test_a_version_4_store_is_migrated_to_typed_phases_and_shows_the_same(tmp_path):
    import json

    path = tmp_path / "results.db"
    with closing(sqlite3.connect(path)) as db:
        db.executescript(VERSION_2_SQL.replace("PRAGMA user_version = 2;", "") + """
ALTER TABLE runs ADD COLUMN label TEXT NOT NULL DEFAULT '';
CREATE TABLE samples (run_id TEXT NOT NULL, operation TEXT NOT NULL, sample INTEGER NOT NULL, name TEXT NOT NULL,
    value REAL NOT NULL, PRIMARY KEY (run_id, operation, sample, name),
    FOREIGN KEY (run_id, operation) REFERENCES operations(run_id, name) ON DELETE CASCADE);
INSERT INTO samples VALUES ('r2', 'create', 1, 'files_per_s', 1000.0);
INSERT INTO samples VALUES ('r2', 'create', 2, 'files_per_s', 1469.0);
PRAGMA user_version = 4;""")
        db.execute("UPDATE operations SET detail_json = ?", (json.dumps(VERSION_4_DETAIL),))
        db.execute("UPDATE runs SET notes_json = ?", (json.dumps(["create: cached in 1 of 2 samples: x"]),))
        db.commit()
    (op,) = Store(path).load_run("r2").operations
    assert (op.layout, op.state, op.detail) == ("striped", "", {"job_file": "active-full.fio", "p99_total": "merged"})
    assert op.monitor.csv == VERSION_4_DETAIL["monitor_csv_samples"] and op.monitor.samples == 9
    assert op.monitor.crossings == VERSION_4_DETAIL["monitor_crossings"]
    assert (op.cache.checked, op.cache.cached, op.cached) == (2, 1, "the disks saw 5%")
    assert op.hosts.samples == VERSION_4_DETAIL["host_samples"] and op.hosts.lost == {"c": "connection refused"}
    assert op.hosts.per_host == VERSION_4_DETAIL["hosts"]
    assert [s["files_per_s"] for s in op.samples] == [1000.0, 1469.0]   # the totals' samples untouched
    # What a reader of the document or the notes sees does not change.
    run = Store(path).load_run("r2")
    assert document.run_document(run)["phases"][0]["detail"] == VERSION_4_DETAIL
    assert run.all_notes == ["create: cached in 1 of 2 samples: x"]
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        hosts = db.execute("SELECT sample, host, value FROM samples WHERE host != '' ORDER BY sample, host").fetchall()
    assert hosts == [(1, "a", 100.0), (1, "b", 80.0), (2, "a", 200.0), (2, "b", 100.0)]
