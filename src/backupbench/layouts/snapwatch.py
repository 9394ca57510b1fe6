"""Classic snapshot health during a workload: Data% sampled, an Invalid snapshot detected.

A classic snapshot that fills up becomes Invalid (lv_attr 'I' in the fifth place,
`swi-I-s---`): everything measured after that is void (field note E's first attempt).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field

from backupbench import process
from backupbench.errors import BackupbenchError

INVALID_STATE = "I"


@dataclass(frozen=True)
class SnapshotState:
    vg: str
    lv: str
    data_percent: float | None
    attr: str

    @property
    def invalid(self) -> bool:
        return len(self.attr) > 4 and self.attr[4] == INVALID_STATE


def parse_lvs(text: str) -> list[SnapshotState]:
    """`lvs --reportformat json -o vg_name,lv_name,data_percent,lv_attr` -> states."""
    report = json.loads(text)["report"][0]["lv"]
    states = []
    for row in report:
        percent = row.get("data_percent", "")
        states.append(SnapshotState(row["vg_name"], row["lv_name"], float(percent) if percent not in ("", None) else None,
                                    row.get("lv_attr", "")))
    return states


@dataclass
class SnapshotWatch:
    snapshots: tuple[tuple[str, str], ...]
    interval_s: float = 2.0
    run: object = process.run
    max_percent: dict[str, float] = field(default_factory=dict)
    invalid: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        argv = ["lvs", "--reportformat", "json", "-o", "vg_name,lv_name,data_percent,lv_attr",
                *[f"{vg}/{lv}" for vg, lv in self.snapshots]]
        try:
            states = parse_lvs(self.run(argv, timeout=30).stdout)
        except (BackupbenchError, ValueError, KeyError) as exc:
            self.errors.append(str(exc))
            return
        for state in states:
            if state.data_percent is not None:
                self.max_percent[state.lv] = max(self.max_percent.get(state.lv, 0.0), state.data_percent)
            if state.invalid:
                self.invalid.add(state.lv)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def __enter__(self) -> "SnapshotWatch":
        if self.snapshots:
            self._thread = threading.Thread(target=self._loop, name="backupbench-snapwatch", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=30)
            self.sample()  # the state at the end counts too

    def figures(self) -> dict[str, float]:
        return {f"snapshot.{lv}.data_pct_max": value for lv, value in self.max_percent.items()}
