"""A store written by an older backupbench brought to today's schema when it is opened, once.

Version 5 keeps the pipeline's own facts about a phase typed (results/phase.py) in
`operations.phase_json`, and each host's figures of each sample in `samples.host`; before, both
were keys of `detail_json`. Every operation row of an older store is rewritten in that shape:
what a run stored then shows the same afterwards. The caller holds the transaction (and the
stop signals: store.Store opens with them held), so a store is migrated whole or not at all.
"""

from __future__ import annotations

import json
import sqlite3

from backupbench.redaction import redact_data
from backupbench.results.phase import PhaseAccount

TYPED_PHASES = 5
_SAMPLES_WITH_HOSTS = """
DROP TABLE IF EXISTS samples_with_hosts;
CREATE TABLE samples_with_hosts (
    run_id TEXT NOT NULL,
    operation TEXT NOT NULL,
    sample INTEGER NOT NULL,
    host TEXT NOT NULL DEFAULT '',
    name TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (run_id, operation, sample, host, name),
    FOREIGN KEY (run_id, operation) REFERENCES operations(run_id, name) ON DELETE CASCADE
);
INSERT INTO samples_with_hosts (run_id, operation, sample, host, name, value)
    SELECT run_id, operation, sample, '', name, value FROM samples;
DROP TABLE samples;
ALTER TABLE samples_with_hosts RENAME TO samples;
"""


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def migrate(db: sqlite3.Connection, version: int) -> None:
    """Bring a store of `version` (PRAGMA user_version) to TYPED_PHASES, once every table of
    today's schema exists (store.SCHEMA made what was missing); a current store is left as it is."""
    if version >= TYPED_PHASES or "phase_json" not in _columns(db, "operations"):
        return
    samples = _columns(db, "samples")
    if samples and "host" not in samples:
        # SQLite cannot change a primary key in place: the table is made again with `host` in it.
        for statement in _SAMPLES_WITH_HOSTS.strip().split(";\n"):
            db.execute(statement)
    rows = db.execute("SELECT run_id, name, detail_json FROM operations WHERE phase_json = '{}'").fetchall()
    for run_id, name, detail_json in rows:
        account, rest = PhaseAccount.from_legacy(json.loads(detail_json))
        db.execute("UPDATE operations SET detail_json = ?, phase_json = ? WHERE run_id = ? AND name = ?",
                   (json.dumps(redact_data(rest)), json.dumps(redact_data(account.to_stored())), run_id, name))
        if account.hosts is None:
            continue
        db.executemany(
            "INSERT OR REPLACE INTO samples (run_id, operation, sample, host, name, value) VALUES (?,?,?,?,?,?)",
            [(run_id, name, number, host, figure, float(value))
             for number, sample in enumerate(account.hosts.samples, start=1)
             for host, figures in sample.items() if isinstance(figures, dict)
             for figure, value in figures.items() if isinstance(value, (int, float))])
