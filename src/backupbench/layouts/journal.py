"""The provisioning journal: every completed action is written down (with its undo) before
the next one starts, so `backupbench cleanup` can finish a teardown after a crash."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

from backupbench.layouts.actions import Action

OPEN_SUFFIX = ".open.jsonl"
CLOSED_SUFFIX = ".closed.jsonl"


class Journal:
    def __init__(self, directory: Path, run_id: str, layout: str):
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{run_id}-{layout}{OPEN_SUFFIX}"

    @classmethod
    def at(cls, path: Path) -> "Journal":
        """An existing open journal (for `cleanup`)."""
        journal = cls.__new__(cls)
        journal.path = path
        return journal

    @property
    def label(self) -> str:
        return self.path.name.removesuffix(OPEN_SUFFIX)

    def record(self, event: str, action: Action, **extra: object) -> None:
        line = json.dumps({"event": event, "action": action.as_dict(), **extra})
        with open(self.path, "a") as handle:
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def close(self) -> None:
        if self.path.exists():
            self.path.rename(self.path.with_name(self.path.name.replace(OPEN_SUFFIX, CLOSED_SUFFIX)))


def pending(path: Path) -> list[Action]:
    """Actions done and not yet undone, most recent first: the order to undo them in."""
    done: list[Action] = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        action = Action.from_dict(entry["action"])
        if entry["event"] == "done":
            done.append(action)
        elif entry["event"] in ("undone", "skipped") and action in done:
            done.remove(action)
    return list(reversed(done))


def open_journals(directory: Path) -> Iterator[Path]:
    if directory.is_dir():
        yield from sorted(directory.glob(f"*{OPEN_SUFFIX}"))
