"""Pieces shared by several commands: the --results option, consoles, JSON output."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from backupbench.analysis.windows import backup_windows, layouts_of, restore_range
from backupbench.report.terminal import recorded_backup_size
from backupbench.results import document
from backupbench.analysis import gates
from backupbench.analysis.gates import Expectation
from backupbench.cli.documents import checked
from backupbench.errors import InputError, LeftBehind
from backupbench.redaction import RedactedStream, redact_data
from backupbench.results.location import results_dir, store_file
from backupbench.results.model import RunRecord
from backupbench.results.store import Store

# Runs this command finished and stored: a stop signal that arrives after a run was closed
# still marks it interrupted (the command exits 130, and the store agrees).
finished_runs: list[tuple[Store, str]] = []


def piped_width(stream: Any, piped: int) -> int | None:
    """None (rich's own choice) on a terminal or when COLUMNS says a width; `piped` otherwise,
    so that a file or a pipe gets whole tables instead of rich's 80 columns. COLUMNS=0 (rich
    would print nothing at all) says no width."""
    columns = os.environ.get("COLUMNS", "")
    return None if stream.isatty() or (columns.isdigit() and int(columns) > 0) else piped


# Humans read stderr while a run goes on; stdout carries results (tables, or JSON with --json).
# Piped output (a file, CI logs) gets a width that fits the run table instead of 80 columns,
# unless COLUMNS names one.
# Whatever they print passes redaction.py: no URL's userinfo, no known secret.
stdout = Console(file=RedactedStream("stdout"), highlight=False, width=piped_width(sys.stdout, 140))
stderr = Console(file=RedactedStream("stderr"), highlight=False)


def results_option(command: Callable) -> Callable:
    return click.option(
        "--results", "results", type=click.Path(path_type=Path), default=None, metavar="DIR",
        help="Results directory (default: $XDG_DATA_HOME/backupbench, or $BACKUPBENCH_RESULTS).",
    )(command)


def open_store(results: Path | None, *, create: bool = False) -> tuple[Path, Store]:
    """The results folder and its store. Commands that only read leave create False: a
    folder or store that is not there is read as empty and never made."""
    directory = results_dir(results)
    return directory, Store(store_file(directory), create=create)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(redact_data(data), indent=2, sort_keys=True) + "\n")


# Documents this command printed on stdout: a command that fails after printing its own
# (hosts check, with a host refused) gets no error document after it, so stdout stays one document.
printed_documents: list[str] = []


def print_document(command: str, payload: dict[str, Any]) -> None:
    """`payload` as the versioned document of `command` (results/document.py, docs/results.md)."""
    write_document(document.envelope(command, payload))


def write_document(data: dict[str, Any]) -> None:
    """A document, checked against its model first (cli/documents.py: a shape its schema does
    not allow is a bug, never printed). Not sorted: the header first, then the keys in the
    order docs/results.md gives them."""
    sys.stdout.write(json.dumps(redact_data(checked(data)), indent=2) + "\n")
    printed_documents.append(data["kind"])


def measured(run: Callable[[], RunRecord]) -> tuple[RunRecord, LeftBehind | None]:
    """The run's record, and what it could not remove: a run that measured to its end is shown
    like any other (tables, or its document) even when something it made is left behind; the
    command then ends with that line (`finish_measured`)."""
    try:
        return run(), None
    except LeftBehind as left:
        if not isinstance(left.run, RunRecord):
            raise
        return left.run, left


def finish_measured(gate: "Gate", left: LeftBehind | None) -> None:
    """After the output: what is left behind (exit 1) comes first, then the gates' verdict."""
    if left is not None:
        raise left
    gate.finish()


def run_analysis(run: RunRecord, backup_size: int | None = None,
                 baseline: RunRecord | None = None, results: Path | None = None) -> document.Analysis:
    """What `show` prints beside the figures, for the run document: the backup windows (for
    `backup_size`, else the size the run recorded) and restore range of each layout; with the
    results folder, each phase's latency picture from the run's raw files (`history` goes without:
    it would read every run's)."""
    size = backup_size or recorded_backup_size(run)
    windows, ranges = [], []
    for layout in layouts_of(run):
        found = restore_range(run, layout)
        if found is not None:
            ranges.append(document.RestoreRange(layout, found.best_bps, found.worst_bps, found.model_best_bps,
                                                found.model_worst_bps))
        if size:
            windows += [document.Window(layout, w.operation, w.label, w.seconds, w.low_seconds, w.high_seconds, w.method)
                        for w in backup_windows(run, size, layout)]
    latency = _latency(run, results) if results is not None else {}
    return document.Analysis(size or None, tuple(windows), tuple(ranges), baseline, latency)


def _latency(run: RunRecord, results: Path) -> dict[str, dict[str, Any]]:
    # Imported here: only a run document reads raw files, and every command imports this module.
    from backupbench.analysis.latency import document_latency, run_latency
    from backupbench.results.location import run_folder

    return document_latency(run_latency(run, run_folder(results, run.run_id)))


LABEL_LIMIT = 200


def _checked_label(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    text = (value or "").strip()
    if len(text) > LABEL_LIMIT:
        raise click.BadParameter(f"at most {LABEL_LIMIT} characters, not {len(text)}")
    if any(not char.isprintable() for char in text):
        raise click.BadParameter("one line of printable text (no tabs, newlines or control characters)")
    return text


def label_option(command: Callable) -> Callable:
    return click.option("--label", "label", default=None, metavar="TEXT", callback=_checked_label,
                        help="Name the run (e.g. 'raid6 before firmware update'): stored with it, shown by "
                             "history, show and comparisons, a label in exports.")(command)


def baseline_option(command: Callable) -> Callable:
    return click.option("--baseline", "baseline_ref", default=None, metavar="RUN",
                        help="Print each phase against this earlier run (x faster / x slower), below the "
                             "settings in which the two differ.")(command)


def _parsed_expectations(ctx: click.Context, param: click.Parameter, texts: tuple[str, ...]) -> list[Expectation]:
    # Parsed as the command line is read: a malformed --expect fails before anything is measured.
    return gates.parse_all(texts)


def expect_option(command: Callable) -> Callable:
    return click.option(
        "--expect", "expectations", multiple=True, callback=_parsed_expectations, metavar="'PHASE[.FIGURE]OP VALUE'",
        help="A figure the run must reach, e.g. 'restore-random>=300MiB/s' or 'active-full.p99<=50ms' (repeatable; "
             "OP: >= <= > <; see docs/comparing.md): a table of expectations met or missed follows the output, "
             "and the command exits 5 if any is missed.")(command)


@dataclass(frozen=True)
class Gate:
    """The --expect verdicts of one run: shown after the command's own output (a table, or the
    "expectations" key of its JSON), acted on last, so the output is whole whatever they say."""

    results: list[gates.GateResult]
    problem: InputError | None = None  # a phase or figure the run does not have

    @classmethod
    def check(cls, expectations: list[Expectation], run: RunRecord) -> "Gate":
        try:
            return cls(gates.evaluate(expectations, run))
        except InputError as exc:
            return cls([], exc)

    def json(self) -> dict[str, Any]:
        return gates.expectations_dict(self.results)

    def print_table(self) -> None:
        if not self.results:
            return
        table = Table(title="Expectations", title_justify="left")
        for heading in ("expectation", "measured", "verdict"):
            table.add_column(heading, justify="right" if heading == "measured" else "left")
        for result in self.results:
            where = "" if result.operation == result.expectation.phase else f" ({result.operation})"
            verdict = Text("met", style="green") if result.met else Text("MISSED", style="bold red")
            # Text, not markup: rich would take the device of `mon.w_await.p95[loop0]` for a style.
            table.add_row(Text(result.expectation.text + where), Text(result.measured_text), verdict)
        stdout.print(table)

    def finish(self) -> None:
        """Exit 2 for a name the run lacks, exit 5 (ExpectationMissed) for a miss."""
        if self.problem is not None:
            raise self.problem
        gates.raise_if_missed(self.results)
