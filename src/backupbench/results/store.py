"""The SQLite results store: runs, their operations, and each operation's figures."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Callable, Iterator

from backupbench import stopping
from backupbench.errors import NotFoundError, StoreError
from backupbench.paths import shortened
from backupbench.process import is_alive as process_alive
from backupbench.redaction import redact, redact_data
from backupbench.results.migrate import migrate
from backupbench.results.model import INTERRUPTED, RUNNING, OperationRecord, RunRecord, known_unit, now_iso
from backupbench.results.phase import PhaseAccount

# PRAGMA user_version; docs/results.md describes every table and column of each version.
# 1: runs, operations, figures. 2: runs.owner (the process a run belongs to). 3: runs.label.
# 4: samples (each sample of a phase measured several times; made on open in an older store).
# 5: operations.phase_json (the pipeline's typed record of a phase, results/phase.py) and
#    samples.host (each host's figures of each sample); an older store is migrated on open.
SCHEMA_VERSION = 5
# Columns later versions added to a table, oldest first: an older store gets them on open.
ADDED_COLUMNS = (
    ("runs", "owner", "TEXT NOT NULL DEFAULT ''"),
    ("runs", "label", "TEXT NOT NULL DEFAULT ''"),
    ("operations", "phase_json", "TEXT NOT NULL DEFAULT '{}'"),
)
SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    status TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    settings_json TEXT NOT NULL,
    host_json TEXT NOT NULL,
    notes_json TEXT NOT NULL DEFAULT '[]',
    error TEXT,
    owner TEXT NOT NULL DEFAULT '',
    label TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS operations (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    name TEXT NOT NULL,
    pattern TEXT NOT NULL,
    status TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    detail_json TEXT NOT NULL DEFAULT '{}',
    phase_json TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (run_id, name)
);
CREATE TABLE IF NOT EXISTS figures (
    run_id TEXT NOT NULL,
    operation TEXT NOT NULL,
    name TEXT NOT NULL,
    value REAL NOT NULL,
    unit TEXT NOT NULL,
    PRIMARY KEY (run_id, operation, name),
    FOREIGN KEY (run_id, operation) REFERENCES operations(run_id, name) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS samples (
    run_id TEXT NOT NULL,
    operation TEXT NOT NULL,
    sample INTEGER NOT NULL,
    host TEXT NOT NULL DEFAULT '',
    name TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (run_id, operation, sample, host, name),
    FOREIGN KEY (run_id, operation) REFERENCES operations(run_id, name) ON DELETE CASCADE
);
"""


# Every text the store writes passes redaction.py: no URL's userinfo, no known secret.
def _text(value: str) -> str:
    return redact(value, bare=False)


def _message(value: str | None) -> str | None:
    return None if value is None else redact(value)


def _notes(notes: list[str]) -> str:
    return json.dumps([redact(note) for note in notes])


def _json(value: object) -> str:
    return json.dumps(redact_data(value))


class Store:
    """alive: whether a run's owner (process.identity) still runs; a 'running' run whose
    owner is gone is read back as interrupted (tests pass their own)."""

    def __init__(self, path: Path, alive: Callable[[str], bool] = process_alive, create: bool = True):
        """create=False (commands that only read: history, show, report, export): a store that
        is not there is read as one with no runs, and nothing is made on disk."""
        self.path = path
        self._alive = alive
        folder = path.parent
        self.absent = not create and not path.exists()
        try:
            if folder.exists() and not folder.is_dir():
                raise StoreError(f"the results directory {folder} is a file, not a directory",
                                 "pass --results DIR naming a directory (it is created if missing)")
            if self.absent:
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            # Held: a stop between creating the tables and stamping their version would
            # leave a store the next run tries to migrate twice.
            with stopping.held(), self._connect() as db:
                version = db.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:
                    raise StoreError(
                        f"{path} was written by a newer backupbench (schema {version})",
                        "upgrade backupbench or use another --results directory",
                    )
                _add_missing_columns(db)
                db.executescript(SCHEMA)
                migrate(db, version)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except OSError as exc:
            raise StoreError(f"cannot open the results store {shortened(path)}: {exc.strerror or exc}",
                             "check the path or pass --results DIR") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the results store {shortened(path)}: {exc}",
                             "check the path or pass --results DIR") from exc

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        if self.absent:  # sqlite3.connect would create the file a reading command must not make
            raise NotFoundError(f"no runs stored in {self.path.parent} yet", "run `backupbench run` first")
        with closing(sqlite3.connect(self.path, timeout=30)) as db:
            db.execute("PRAGMA foreign_keys = ON")
            db.row_factory = sqlite3.Row
            with db:
                yield db

    def create_run(self, run: RunRecord) -> None:
        with self._connect() as db:
            db.execute(
                "INSERT INTO runs (run_id, kind, target, status, started_at, finished_at, settings_json, host_json,"
                " notes_json, error, owner, label) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (run.run_id, run.kind, _text(run.target), run.status, run.started_at, run.finished_at,
                 _json(run.settings), _json(run.host), _notes(run.notes), _message(run.error), run.owner,
                 _text(run.label)),
            )

    def set_label(self, run_id: str, label: str) -> None:
        with self._connect() as db:
            if db.execute("UPDATE runs SET label = ? WHERE run_id = ?", (_text(label), run_id)).rowcount == 0:
                raise NotFoundError(f"no run {run_id!r} in {self.path}", "see `backupbench history` for run ids")

    def save_operation(self, run_id: str, seq: int, op: OperationRecord) -> None:
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO operations (run_id, seq, name, pattern, status, started_at, finished_at,"
                " detail_json, phase_json) VALUES (?,?,?,?,?,?,?,?,?)",
                (run_id, seq, op.name, _text(op.pattern), op.status, op.started_at, op.finished_at,
                 _json(op.detail), _json(op.account.to_stored())),
            )
            db.execute("DELETE FROM figures WHERE run_id = ? AND operation = ?", (run_id, op.name))
            db.executemany(
                "INSERT INTO figures VALUES (?,?,?,?,?)",
                [(run_id, op.name, name, float(value), op.unit(name))
                 for name, value in op.figures.items() if value is not None],
            )
            # A phase measured once keeps its one sample in `figures` alone.
            db.execute("DELETE FROM samples WHERE run_id = ? AND operation = ?", (run_id, op.name))
            db.executemany(
                "INSERT INTO samples (run_id, operation, sample, host, name, value) VALUES (?,?,?,?,?,?)",
                [(run_id, op.name, number, "", name, float(value))
                 for number, sample in enumerate(op.samples if len(op.samples) > 1 else [], start=1)
                 for name, value in sample.items() if value is not None] + _host_rows(run_id, op),
            )

    def finish_run(self, run: RunRecord) -> None:
        with self._connect() as db:
            db.execute(
                "UPDATE runs SET status=?, finished_at=?, notes_json=?, error=?, host_json=? WHERE run_id=?",
                (run.status, run.finished_at, _notes(run.notes), _message(run.error), _json(run.host), run.run_id),
            )

    def has_run(self, run_id: str) -> bool:
        with self._connect() as db:
            return db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None

    def mark_interrupted(self, run_id: str, note: str, if_status: tuple[str, ...] = (RUNNING,)) -> bool:
        """Store the run as interrupted, with `note`, if its status is one of `if_status`;
        True if it changed."""
        with self._connect() as db:
            row = db.execute("SELECT status, notes_json FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None or row["status"] not in if_status:
                return False
            notes = json.loads(row["notes_json"]) + [redact(note)]
            db.execute("UPDATE runs SET status=?, error=COALESCE(error, 'interrupted'), notes_json=?, "
                       "finished_at=COALESCE(finished_at, ?) WHERE run_id=?",
                       (INTERRUPTED, json.dumps(notes), now_iso(), run_id))
            db.execute("UPDATE operations SET status=? WHERE run_id=? AND status=?", (INTERRUPTED, run_id, RUNNING))
        return True

    def _live(self, run: RunRecord) -> RunRecord:
        """A run stored as running whose process is gone was interrupted, and is shown so."""
        if run.status == RUNNING and not (run.owner and self._alive(run.owner)):
            run.status, run.error = INTERRUPTED, run.error or "interrupted: its process is gone"
            for op in run.operations:
                if op.status == RUNNING:
                    op.status = INTERRUPTED
        return run

    def list_runs(self, limit: int = 20) -> list[RunRecord]:
        if self.absent:
            return []
        with self._connect() as db:
            rows = db.execute("SELECT * FROM runs ORDER BY started_at DESC, run_id DESC LIMIT ?", (limit,)).fetchall()
            return [self._live(self._load_operations(db, _run_from_row(row))) for row in rows]

    def resolve_id(self, ref: str) -> str:
        """A full id, a unique prefix of one, 'latest', or a run's --label (an id wins over a label)."""
        if self.absent:
            raise NotFoundError(f"no run {ref!r}: no runs stored in {self.path.parent} yet",
                                "run `backupbench run` first, or pass --results DIR naming a results folder")
        with self._connect() as db:
            if ref == "latest":
                row = db.execute("SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC LIMIT 1").fetchone()
                if row is None:
                    raise NotFoundError("no runs stored yet", "run `backupbench run` first")
                return row["run_id"]
            if db.execute("SELECT 1 FROM runs WHERE run_id = ?", (ref,)).fetchone() is not None:
                return ref
            by_prefix = [row["run_id"] for row in db.execute(
                "SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '\\'",
                (ref.replace("%", "\\%").replace("_", "\\_") + "%",))]
            by_label = [row["run_id"] for row in db.execute(
                "SELECT run_id FROM runs WHERE label = ? ORDER BY started_at, run_id", (ref,))] if ref else []
        if len(by_prefix) == 1:
            return by_prefix[0]
        if len(by_label) == 1:
            return by_label[0]
        if len(by_label) > 1:
            raise NotFoundError(f"label {ref!r} names {len(by_label)} runs: {', '.join(by_label)}",
                                "give one of these run ids instead")
        if by_prefix:
            raise NotFoundError(f"{ref!r} matches {len(by_prefix)} runs", "give more of the run id")
        raise NotFoundError(f"no run {ref!r} in {self.path}",
                            "see `backupbench history` for run ids and labels")

    def sweep_runs(self, ref: str) -> list[RunRecord]:
        """The runs of one `backupbench sweep`, in the order they ran: `ref` its id (settings'
        sweep.id, workloads/sweep.py), `sweep-<id>`, a unique prefix of the id, or 'latest'."""
        fix = "give a sweep's id as `backupbench sweep` printed it (sweep-<id>), or latest"
        if self.absent:
            raise NotFoundError(f"no sweep {ref!r}: no runs stored in {self.path.parent} yet", fix)
        wanted = ref.strip().removeprefix("sweep-")
        with self._connect() as db:
            ids = list(dict.fromkeys(row[0] for row in db.execute(
                "SELECT json_extract(settings_json, '$.sweep.id') FROM runs WHERE "
                "json_extract(settings_json, '$.sweep.id') IS NOT NULL ORDER BY started_at, run_id")))
            chosen = ids[-1:] if wanted == "latest" else (
                [i for i in ids if i == wanted] or [i for i in ids if wanted and i.startswith(wanted)])
            if len(chosen) != 1:
                said = f"{len(chosen)} sweeps match" if chosen else "no sweep"
                raise NotFoundError(f"{said} {ref!r} in {self.path} ({len(ids)} stored)", fix)
            rows = db.execute("SELECT * FROM runs WHERE json_extract(settings_json, '$.sweep.id') = ? "
                              "ORDER BY started_at, run_id", (chosen[0],)).fetchall()
            return [self._live(self._load_operations(db, _run_from_row(row))) for row in rows]

    def load_run(self, ref: str) -> RunRecord:
        run_id = self.resolve_id(ref)
        with self._connect() as db:
            row = db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            return self._live(self._load_operations(db, _run_from_row(row)))

    @staticmethod
    def _load_operations(db: sqlite3.Connection, run: RunRecord) -> RunRecord:
        ops = db.execute("SELECT * FROM operations WHERE run_id = ? ORDER BY seq", (run.run_id,)).fetchall()
        # In the order they were stored: the workload's own first, as in the run's --json.
        figures = db.execute("SELECT operation, name, value, unit FROM figures WHERE run_id = ? ORDER BY rowid",
                             (run.run_id,)).fetchall()
        samples = db.execute("SELECT operation, sample, host, name, value FROM samples WHERE run_id = ? "
                             "ORDER BY sample, rowid", (run.run_id,)).fetchall()
        samples_by_op: dict[str, dict[int, dict[str, float]]] = {}
        hosts_by_op: dict[str, dict[int, dict[str, dict[str, float]]]] = {}
        for row in samples:
            if row["host"]:
                by_sample = hosts_by_op.setdefault(row["operation"], {}).setdefault(row["sample"], {})
                by_sample.setdefault(row["host"], {})[row["name"]] = row["value"]
            else:
                samples_by_op.setdefault(row["operation"], {}).setdefault(row["sample"], {})[row["name"]] = row["value"]
        by_op: dict[str, dict[str, float]] = {}
        units_by_op: dict[str, dict[str, str]] = {}
        for fig in figures:
            by_op.setdefault(fig["operation"], {})[fig["name"]] = fig["value"]
            if fig["unit"] != known_unit(fig["name"]):
                units_by_op.setdefault(fig["operation"], {})[fig["name"]] = fig["unit"]
        run.operations = []
        for op in ops:
            record = OperationRecord(
                name=op["name"], pattern=op["pattern"], status=op["status"],
                started_at=op["started_at"], finished_at=op["finished_at"],
                figures=by_op.get(op["name"], {}), detail=json.loads(op["detail_json"]),
                units=units_by_op.get(op["name"], {}),
                samples=list(samples_by_op.get(op["name"], {}).values()),
            )
            record.take(PhaseAccount.from_stored(json.loads(op["phase_json"]),
                                                 list(hosts_by_op.get(op["name"], {}).values())))
            run.operations.append(record)
        return run


def _host_rows(run_id: str, op: OperationRecord) -> list[tuple[str, str, int, str, str, float]]:
    """Each host's figures of each sample, one row a figure (a host's one-sample figures too:
    they are nowhere else)."""
    if op.hosts is None:
        return []
    return [(run_id, op.name, number, host, name, float(value))
            for number, sample in enumerate(op.hosts.samples, start=1)
            for host, figures in sample.items()
            for name, value in figures.items() if isinstance(value, (int, float))]


def _run_from_row(row: sqlite3.Row) -> RunRecord:
    return RunRecord(
        run_id=row["run_id"], kind=row["kind"], target=row["target"], status=row["status"],
        started_at=row["started_at"], finished_at=row["finished_at"],
        settings=json.loads(row["settings_json"]), host=json.loads(row["host_json"]),
        notes=json.loads(row["notes_json"]), error=row["error"], owner=row["owner"] or "",
        label=row["label"] or "",
    )


def _add_missing_columns(db: sqlite3.Connection) -> None:
    """A store an older backupbench made gets the columns added since (tables not yet
    made are made whole by SCHEMA)."""
    for table, column, declaration in ADDED_COLUMNS:
        present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if present and column not in present:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
