"""The width of what the commands print: rich's own on a terminal, the width COLUMNS names,
and otherwise (a file, a pipe, CI logs) wide enough for whole tables."""

from __future__ import annotations

import io

from backupbench.cli.common import piped_width
from host_support import run_cli

CAPACITY = ["size", "capacity", "--disks", "45", "--disk-size", "6TB", "--layout", "draid2", "--draid-data", "3",
            "--draid-spares", "2"]


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def test_a_terminal_leaves_the_width_to_rich(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert piped_width(_Stream(tty=True), 140) is None


def test_piped_output_is_wide_unless_columns_names_a_width(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert piped_width(_Stream(tty=False), 140) == 140
    for no_width in ("wide", "0", "-5"):
        monkeypatch.setenv("COLUMNS", no_width)
        assert piped_width(_Stream(tty=False), 140) == 140
    monkeypatch.setenv("COLUMNS", "70")
    assert piped_width(_Stream(tty=False), 140) is None  # rich reads COLUMNS itself


def _widest_table_line(columns: str | None) -> int:
    done = run_cli(CAPACITY, env={"COLUMNS": columns} if columns is not None else None, unset=("COLUMNS",),
                   timeout=120)
    assert done.returncode == 0, done.stderr
    return max(len(line) for line in done.stdout.splitlines() if line[:1] in "┏┃┡│└")


def test_a_piped_command_keeps_to_the_columns_it_is_given():
    assert _widest_table_line(None) > 70  # the table whole when nothing says a width
    assert _widest_table_line("70") <= 70
