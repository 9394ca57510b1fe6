"""Where results live: --results DIR, else $XDG_DATA_HOME/backupbench."""

from __future__ import annotations

import os
from pathlib import Path

from backupbench.errors import InputError
from backupbench.paths import PathRefused, Syntax, check_length, for_program, shortened

# The store's file in a results folder; every reader and writer asks `store_file`.
STORE_NAME = "results.db"


def results_dir(explicit: Path | None = None) -> Path:
    """InputError, naming where the path came from, for one too long to be opened."""
    if explicit is not None:
        return _checked(explicit.expanduser().resolve(), "--results")
    env = os.environ.get("BACKUPBENCH_RESULTS")
    if env:
        return _checked(Path(env).expanduser().resolve(), "BACKUPBENCH_RESULTS")
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return _checked(Path(data_home) / "backupbench", "XDG_DATA_HOME")


# SQLite opens no file whose path is longer (its unix VFS's MAX_PATHNAME, less the NUL); the
# store's rollback journal, results.db-journal, is the longest name it makes in the folder.
SQLITE_MAX_PATH_BYTES = 511
STORE_FILE_LONGEST = STORE_NAME + "-journal"


def store_file(results: Path) -> Path:
    return results / STORE_NAME


def _checked(path: Path, source: str) -> Path:
    """Refused before anything is made: a run writes fio job files and logs there and hands
    their paths to fio, so a path no program can be given fails now, not after a run opened."""
    what, fix = f"the results folder ({source})", f"give {source} a shorter path"
    check_length(path, what, fix)
    try:
        for_program(path, Syntax.ARGV)
    except PathRefused as refused:
        raise InputError(f"{what}: {refused.message}", f"give {source} another path") from None
    if path.exists() and not path.is_dir():
        raise InputError(f"{what} {shortened(path)} is a file, not a directory",
                         f"give {source} a directory (it is created if missing)")
    needed = len(os.fsencode(str(path / STORE_FILE_LONGEST)))
    if needed > SQLITE_MAX_PATH_BYTES:
        raise InputError(f"{what} {shortened(path)} is too long for the results store: SQLite opens paths of at "
                         f"most {SQLITE_MAX_PATH_BYTES} bytes, and its {STORE_FILE_LONGEST} there would be {needed:,}",
                         fix)
    return path


# What a run writes into its folder before the store holds it (runner/pipeline.RunSession): a
# folder holding only these, of a run the store never got, was cut off there (a SIGKILL).
SETTINGS_FILE = "settings.json"
HOST_FILE = "host.json"
OPENING_FILES = frozenset({SETTINGS_FILE, HOST_FILE})


def run_folder(results: Path, run_id: str) -> Path:
    return results / "runs" / run_id


def remove_opening_folder(folder: Path) -> bool:
    """Remove a run folder cut off before the store held its run, only when it holds nothing but
    OPENING_FILES (anything else there is not ours to judge); whether it was removed."""
    if not folder.is_dir() or folder.is_symlink():
        return False
    inside = list(folder.iterdir())
    if not all(path.name in OPENING_FILES and path.is_file() and not path.is_symlink() for path in inside):
        return False
    for path in inside:
        path.unlink()
    folder.rmdir()
    return True
