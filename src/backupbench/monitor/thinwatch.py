"""Thin pool fill during a workload: data and metadata % sampled, a full or failed pool detected.

A thin pool hands out its data chunks as the thin volumes on it are written; when its data
(or its metadata) runs out, writes wait and then fail, and lvs shows it in the pool's health
(lv_attr's ninth place: D out of data space, M metadata read only, F failed). The figures
of a workload that ran into that are void. A pool that only came close (FillThresholds: 80 %
warning, 95 % critical, as for snapshots) is named in the run's notes; the highest data
and metadata % of each pool are stored with the workload's phases.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from backupbench import process
from backupbench.errors import BackupbenchError
from backupbench.monitor.snapwatch import LVS_TIMEOUT_S, PeriodicWatch, counted, lvs_rows, percent
from backupbench.monitor.thresholds import FillThresholds

THIN_POOL_TYPE = "t"   # lv_attr's first place for a thin pool (its hidden data LV is 'T')
# lv_attr's ninth place (volume health) for a thin pool, and what it means.
POOL_HEALTH = {"D": "ran out of data space", "M": "has read-only metadata (it ran out of metadata space)",
               "F": "failed"}
LVS_COLUMNS = "vg_name,lv_name,data_percent,metadata_percent,lv_attr"


@dataclass(frozen=True)
class ThinPoolState:
    vg: str
    lv: str
    data_percent: float | None
    metadata_percent: float | None
    attr: str

    @property
    def trouble(self) -> str | None:
        """What is wrong with the pool, from its health flag; None when it is healthy."""
        return POOL_HEALTH.get(self.attr[8]) if len(self.attr) > 8 else None


def parse_thin_pools(text: str) -> list[ThinPoolState]:
    """`lvs --reportformat json -o vg_name,lv_name,data_percent,metadata_percent,lv_attr VG...`
    -> the thin pools among the LVs listed (thin volumes, snapshots and others left out)."""
    return [ThinPoolState(row["vg_name"], row["lv_name"], percent(row.get("data_percent")),
                          percent(row.get("metadata_percent")), row.get("lv_attr", ""))
            for row in lvs_rows(text) if row.get("lv_attr", "").startswith(THIN_POOL_TYPE)]


@dataclass
class ThinPoolWatch(PeriodicWatch):
    vgs: tuple[str, ...]
    interval_s: float = 2.0
    run: object = process.run
    thresholds: FillThresholds = field(default_factory=FillThresholds)
    data_max: dict[str, float] = field(default_factory=dict)
    metadata_max: dict[str, float] = field(default_factory=dict)
    troubles: dict[str, str] = field(default_factory=dict)   # pool -> what went wrong (its health)
    errors: list[str] = field(default_factory=list)

    def watching(self) -> bool:
        return bool(self.vgs)

    def sample(self) -> None:
        try:
            pools = parse_thin_pools(self.run(["lvs", "--reportformat", "json", "-o", LVS_COLUMNS, *self.vgs],
                                              timeout=LVS_TIMEOUT_S).stdout)
        except (BackupbenchError, ValueError, KeyError) as exc:
            self.errors.append(str(exc))
            return
        for pool in pools:
            for highest, value in ((self.data_max, pool.data_percent), (self.metadata_max, pool.metadata_percent)):
                if value is not None:
                    highest[pool.lv] = max(highest.get(pool.lv, 0.0), value)
            if pool.trouble is not None:
                self.troubles.setdefault(pool.lv, pool.trouble)

    def figures(self) -> dict[str, float]:
        """'thinpool.<pool>.data_pct_max' and '.metadata_pct_max': the fullest each pool got."""
        figures = {f"thinpool.{lv}.data_pct_max": value for lv, value in self.data_max.items()}
        figures.update({f"thinpool.{lv}.metadata_pct_max": value for lv, value in self.metadata_max.items()})
        return figures

    def notes(self) -> list[str]:
        """Pools whose data or metadata came close to full, and the lvs calls that failed."""
        notes = []
        for lv in sorted({*self.data_max, *self.metadata_max}):
            for what, highest in (("data", self.data_max), ("metadata", self.metadata_max)):
                note = self.thresholds.note(f"thin pool {lv} {what}", highest[lv]) if lv in highest else None
                notes += [note] if note is not None else []
        return notes + [f"thin pool watch: {error}" for error in counted(self.errors)]

    def void_reason(self, layout: str) -> str | None:
        """Why the workload's figures are void, when a pool ran out of space or failed."""
        if not self.troubles:
            return None
        what = "; ".join(f"thin pool {lv} {trouble}" for lv, trouble in sorted(self.troubles.items()))
        return (f"{what} on {layout}: writes waited or failed, so the figures of this run are void; "
                "give the pool more space (pool_size) or write less")
