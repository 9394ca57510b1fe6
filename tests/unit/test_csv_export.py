"""`show --csv` and `history --csv`: every stored figure once, in long format, read back
exactly (value, unit, device) and compared with the store's own rows."""

from __future__ import annotations

import csv
import io
import sqlite3
from contextlib import closing
from pathlib import Path

from backupbench.cli.app import main
from backupbench.results import csvout
from backupbench.results.document import DIMENSIONLESS
from backupbench.results.model import COMPLETE, FAILED, OperationRecord, RunRecord, known_unit, stored_name
from backupbench.results.store import Store


def _store_two_runs(folder: Path) -> Store:
    store = Store(folder / "results.db")
    first = RunRecord(run_id="20261122T000000-aaaa", kind="kb2014", target="/srv", settings={},
                      started_at="2026-11-22T00:00:00+00:00", status=COMPLETE, label='raid6, "before"')
    second = RunRecord(run_id="20261123T000000-bbbb", kind="smallfiles", target="/srv", settings={},
                       started_at="2026-11-23T00:00:00+00:00", status=FAILED)
    phases = [
        (first, [OperationRecord(name="active-full", pattern="write qd1", status=COMPLETE,
                                figures={"effective_bw": 0.1 + 0.2, "write_p99_lat": 123456789.0,
                                         "mon.vda.w_await.p95": 4.25, "mon.vdb.w_await.p95": 1e-12,
                                         "mon.cpu_user.avg": 33.3},
                                units={"mon.vda.w_await.p95": "ms", "mon.vdb.w_await.p95": "ms",
                                       "mon.cpu_user.avg": "%"})]),
        (second, [OperationRecord(name="create", pattern="create", status=COMPLETE,
                                 figures={"files_per_s": 1e6 / 3, "lock_applied": 1.0}),
                 OperationRecord(name="verify", pattern="read", status=FAILED, figures={})]),
    ]
    for run, ops in phases:
        store.create_run(run)
        for seq, op in enumerate(ops):
            store.save_operation(run.run_id, seq, op)
    return store


def _stored_figures(folder: Path) -> dict[tuple[str, str, str], tuple[float, str]]:
    with closing(sqlite3.connect(folder / "results.db")) as db:
        rows = db.execute("SELECT run_id, operation, name, value, unit FROM figures").fetchall()
    return {(run_id, op, name): (value, unit or known_unit(name) or DIMENSIONLESS)
            for run_id, op, name, value, unit in rows}


def _read_back(text: str) -> tuple[list[str], dict[tuple[str, str, str], tuple[float, str]], list[dict]]:
    reader = csv.DictReader(io.StringIO(text))
    rows = list(reader)
    figures = {(row["run_id"], row["phase"], stored_name(row["figure"], row["device"] or None)):
               (float(row["value"]), row["unit"]) for row in rows}
    assert len(figures) == len(rows), "each (run, phase, figure, device) once"
    return list(reader.fieldnames or []), figures, rows


def test_history_csv_round_trips_every_stored_figure_exactly(tmp_path, capsys):
    _store_two_runs(tmp_path)
    assert main(["history", "--csv", "--results", str(tmp_path)]) == 0
    columns, figures, rows = _read_back(capsys.readouterr().out)
    assert tuple(columns) == csvout.COLUMNS
    assert figures == _stored_figures(tmp_path)  # values exact: 0.1 + 0.2, 1e-12, 1e6 / 3
    by_device = {(row["figure"], row["device"]): row for row in rows if row["run_id"].endswith("aaaa")}
    assert by_device[("mon.w_await.p95", "vda")]["unit"] == "ms"
    assert by_device[("mon.cpu_user.avg", "")]["label"] == 'raid6, "before"'
    created = next(row for row in rows if row["figure"] == "files_per_s")
    assert (created["run_kind"], created["run_status"], created["unit"]) == ("smallfiles", "failed", "files/s")


def test_show_csv_is_one_run_and_history_limit_counts_runs(tmp_path, capsys):
    _store_two_runs(tmp_path)
    assert main(["show", "20261122", "--csv", "--results", str(tmp_path)]) == 0
    _, figures, rows = _read_back(capsys.readouterr().out)
    assert {row["run_id"] for row in rows} == {"20261122T000000-aaaa"} and len(figures) == 5
    assert main(["history", "--csv", "--limit", "1", "--results", str(tmp_path)]) == 0
    _, _, rows = _read_back(capsys.readouterr().out)
    assert {row["run_id"] for row in rows} == {"20261123T000000-bbbb"}  # the newest


def test_an_empty_store_gives_the_header_only(tmp_path, capsys):
    assert main(["history", "--csv", "--results", str(tmp_path)]) == 0
    assert capsys.readouterr().out == ",".join(csvout.COLUMNS) + "\n"


def test_csv_and_json_together_are_refused(tmp_path, capsys):
    _store_two_runs(tmp_path)
    assert main(["show", "--csv", "--json", "--results", str(tmp_path)]) == 2
    assert "--json and --csv do not go together" in capsys.readouterr().err


def test_each_row_also_gives_its_value_in_the_base_unit(tmp_path, capsys):
    _store_two_runs(tmp_path)
    assert main(["history", "--csv", "--results", str(tmp_path)]) == 0
    _, _, rows = _read_back(capsys.readouterr().out)
    base = {(row["figure"], row["device"]): (float(row["base_value"]), row["base_unit"]) for row in rows}
    assert base[("mon.w_await.p95", "vda")] == (4.25e-3, "s")
    assert base[("write_p99_lat", "")] == (123456789.0 * 1e-9, "s")
    assert base[("mon.cpu_user.avg", "")] == (33.3 * 0.01, "ratio")
    assert base[("effective_bw", "")] == (0.1 + 0.2, "B/s")
    assert base[("files_per_s", "")] == (1e6 / 3, "files/s")  # its own base


class _Quiet:
    def stage_started(self, name, description): ...
    def stage_progress(self, name, fraction, detail): ...
    def stage_finished(self, name, record): ...


def test_a_phase_whose_every_request_failed_is_stored_failed_with_its_figures(tmp_path, capsys):
    from backupbench.runner.phases import PhaseRecorder

    store = Store(tmp_path / "results.db")
    run = RunRecord(run_id="20261124T000000-cccc", kind="s3", target="http://127.0.0.1:9000", settings={},
                    started_at="2026-11-24T00:00:00+00:00")
    store.create_run(run)
    recorder = PhaseRecorder(run, store, tmp_path, _Quiet(), None)
    recorder.started("put", "PUT objects", "PUT 1 MiB x4")
    recorder.finished("put", {"ops": 0.0, "errors": 20.0, "effective_bw": 0.0}, failed=True)
    run.status = FAILED
    store.finish_run(run)
    assert main(["show", "20261124", "--csv", "--results", str(tmp_path)]) == 0
    _, _, rows = _read_back(capsys.readouterr().out)
    assert {(row["figure"], row["phase_status"]) for row in rows} == {
        ("ops", "failed"), ("errors", "failed"), ("effective_bw", "failed")}


def test_a_recipe_runs_rows_name_their_layout_and_state_apart_from_the_phase(tmp_path, capsys):
    """Issue 42: the layout was only inside the phase name (`raid6/degraded/restore-random`)."""
    store = Store(tmp_path / "results.db")
    run = RunRecord(run_id="20261124T000000-dddd", kind="recipe", target="r", settings={},
                    started_at="2026-11-24T00:00:00+00:00")
    store.create_run(run)
    op = OperationRecord("raid6/degraded/restore-random", "randread qd1", COMPLETE, figures={"effective_bw": 1.0},
                         layout="raid6", state="degraded")
    store.save_operation(run.run_id, 0, op)
    store.finish_run(run)
    assert main(["show", "20261124", "--csv", "--results", str(tmp_path)]) == 0
    _, _, rows = _read_back(capsys.readouterr().out)
    assert [(row["phase"], row["layout"], row["state"]) for row in rows] == [
        ("raid6/degraded/restore-random", "raid6", "degraded")]
