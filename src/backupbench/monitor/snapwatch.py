"""Classic snapshot health during a workload: Data% sampled, an Invalid snapshot detected.

A classic snapshot that fills up becomes Invalid (lv_attr 'I' in the fifth place,
`swi-I-s---`): everything measured after that is void (field note E's first attempt).
One that came close (FillThresholds: 80 % warning, 95 % critical) is named in the run's
notes. `PeriodicWatch` is the sampling thread this watch and the thin-pool watch
(thinwatch.py) share.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field

from backupbench import process
from backupbench.errors import BackupbenchError
from backupbench.monitor.thresholds import FillThresholds

INVALID_STATE = "I"
LVS_TIMEOUT_S = 30


@dataclass(frozen=True)
class SnapshotState:
    vg: str
    lv: str
    data_percent: float | None
    attr: str

    @property
    def invalid(self) -> bool:
        return len(self.attr) > 4 and self.attr[4] == INVALID_STATE


def percent(value: object) -> float | None:
    """An lvs percent column: '15.69' -> 15.69; '' (not applicable) -> None."""
    return float(value) if value not in ("", None) else None


def lvs_rows(text: str) -> list[dict]:
    """The LV rows of `lvs --reportformat json` (one report, whatever LVs or VGs were named)."""
    return json.loads(text)["report"][0]["lv"]


def parse_lvs(text: str) -> list[SnapshotState]:
    """`lvs --reportformat json -o vg_name,lv_name,data_percent,lv_attr` -> states."""
    return [SnapshotState(row["vg_name"], row["lv_name"], percent(row.get("data_percent")), row.get("lv_attr", ""))
            for row in lvs_rows(text)]


def counted(errors: list[str]) -> list[str]:
    """Each distinct error once, with how often it came: a watch samples every few seconds."""
    counts: dict[str, int] = {}
    for error in errors:
        counts[error] = counts.get(error, 0) + 1
    return [error if n == 1 else f"{error} ({n} times)" for error, n in counts.items()]


class PeriodicWatch:
    """sample() every `interval_s` seconds on a thread while the workload runs, and once more
    at its end (the state at the end counts too). A subclass says whether it has anything
    to watch; with nothing, no thread starts and lvs never runs."""

    interval_s: float

    def watching(self) -> bool:
        raise NotImplementedError

    def sample(self) -> None:
        raise NotImplementedError

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def __enter__(self):
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if self.watching():
            self._thread = threading.Thread(target=self._loop, name=f"backupbench-{type(self).__name__}",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=LVS_TIMEOUT_S)
            self.sample()


@dataclass
class SnapshotWatch(PeriodicWatch):
    snapshots: tuple[tuple[str, str], ...]
    interval_s: float = 2.0
    run: object = process.run
    thresholds: FillThresholds = field(default_factory=FillThresholds)
    max_percent: dict[str, float] = field(default_factory=dict)
    invalid: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)

    def watching(self) -> bool:
        return bool(self.snapshots)

    def sample(self) -> None:
        argv = ["lvs", "--reportformat", "json", "-o", "vg_name,lv_name,data_percent,lv_attr",
                *[f"{vg}/{lv}" for vg, lv in self.snapshots]]
        try:
            states = parse_lvs(self.run(argv, timeout=LVS_TIMEOUT_S).stdout)
        except (BackupbenchError, ValueError, KeyError) as exc:
            self.errors.append(str(exc))
            return
        for state in states:
            if state.data_percent is not None:
                self.max_percent[state.lv] = max(self.max_percent.get(state.lv, 0.0), state.data_percent)
            if state.invalid:
                self.invalid.add(state.lv)

    def figures(self) -> dict[str, float]:
        """The highest Data% of each snapshot, and 1 for each that turned Invalid."""
        figures = {f"snapshot.{lv}.data_pct_max": value for lv, value in self.max_percent.items()}
        figures.update({f"snapshot.{lv}.invalid": 1.0 for lv in sorted(self.invalid)})
        return figures

    def notes(self) -> list[str]:
        """Snapshots that came close to full (an Invalid one voids the run instead) and the
        lvs calls that failed."""
        notes = [note for lv, value in self.max_percent.items() if lv not in self.invalid
                 and (note := self.thresholds.note(f"snapshot {lv} Data%", value)) is not None]
        return notes + [f"snapshot watch: {error}" for error in counted(self.errors)]
