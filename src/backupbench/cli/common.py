"""Pieces shared by several commands: the --results option, consoles, JSON output."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

import click
from rich.console import Console

from backupbench.results.location import results_dir
from backupbench.results.store import Store

# Runs this command finished and stored: a stop signal that arrives after a run was closed
# still marks it interrupted (the command exits 130, and the store agrees).
finished_runs: list[tuple[Store, str]] = []

# Humans read stderr while a run goes on; stdout carries results (tables, or JSON with --json).
# Piped output (a file, CI logs) gets a width that fits the run table instead of 80 columns.
stdout = Console(highlight=False, width=None if sys.stdout.isatty() else 140)
stderr = Console(stderr=True, highlight=False)


def results_option(command: Callable) -> Callable:
    return click.option(
        "--results", "results", type=click.Path(path_type=Path), default=None, metavar="DIR",
        help="Results directory (default: $XDG_DATA_HOME/backupbench, or $BACKUPBENCH_RESULTS).",
    )(command)


def open_store(results: Path | None) -> tuple[Path, Store]:
    directory = results_dir(results)
    return directory, Store(directory / "results.db")


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")


def baseline_option(command: Callable) -> Callable:
    return click.option("--baseline", "baseline_ref", default=None, metavar="RUN",
                        help="Print each phase's slowdown against this earlier run.")(command)
