"""The files a restore read where they lie (`--workload restore`): one row per file with its
extent map in figures (engines/file_map.py), its measured restores and the model's (disk_model.py),
for the terminal and the HTML page; and on the page, each file's extent map drawn.

The picture is the file's offset (across) against where on the disk it lies (up): a file laid
out in one piece is one straight line, and every break in the line is a jump a restore in
order pays a seek for. Extents shared with other files (block clone) are drawn in their own
colour: a synthetic full made of clones is a staircase of them.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from rich.table import Table
from rich.text import Text

from backupbench import disk_model, units
from backupbench.report import palette
from backupbench.report import html_page as page
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord

HEADINGS = ("file", "size", "fs", "extents", "mean extent", "shared", "jumps", "median jump",
            "seq MiB/s", "seq model", "random MiB/s", "random model")


@dataclass(frozen=True)
class FileRow:
    path: str
    fs_type: str
    map_file: str
    figures: dict[str, float]
    sequential: float | None
    random: float | None

    def cells(self) -> list[str]:
        f = self.figures
        shared = units.format_size(int(f["file_shared_bytes"])) if f.get("file_shared_extents") else "none"
        median = units.format_size(int(f["file_median_jump_bytes"])) if f.get("file_jumps") else "-"
        return [Path(self.path).name, units.format_size(int(f["file_bytes"])), self.fs_type,
                f"{f['file_extents']:,.0f}", units.format_size(int(f["file_mean_extent_bytes"])), shared,
                f"{f['file_jumps']:,.0f}", median, _mib(self.sequential), _mib(f.get(disk_model.MODEL_SEQUENTIAL)),
                _mib(self.random), _mib(f.get(disk_model.MODEL_RANDOM))]


def _mib(bps: float | None) -> str:
    return "-" if bps is None else f"{bps / units.MiB:,.1f}"


def file_rows(run: RunRecord) -> list[FileRow]:
    """One row per file read, in the order read; [] for a run that read none. An aging run's
    restores are not rows: it reads one file on several days, as it ages (report/aging.py
    shows them by day)."""
    by_file: dict[str, list[OperationRecord]] = {}
    for op in run.operations:
        if op.status == COMPLETE and "file_bytes" in op.figures and op.detail.get("file") and \
                "simulated_day" not in op.figures:
            by_file.setdefault(str(op.detail["file"]), []).append(op)
    rows = []
    for path, ops in by_file.items():
        speed = {op.name.rpartition(":")[2]: op.figures.get("effective_bw") for op in ops}
        rows.append(FileRow(path, str(ops[0].detail.get("fs_type", "")), str(ops[0].detail.get("map", "")),
                            dict(ops[0].figures), speed.get("restore-sequential"), speed.get("restore-random")))
    return rows


def caption(run: RunRecord) -> str:
    disk = next((str(op.detail["model_disk"]) for op in run.operations if op.detail.get("model_disk")), "")
    files = ", ".join(row.path for row in file_rows(run))
    return (f"{files}: read only, each file as it lies. Model: the same file, laid out as it is, on a disk of {disk} "
            "(a jump costs one access; one disk serves one request at a time): what a spinning disk would give, "
            "uncertain by nature.")


def files_table(run: RunRecord) -> Table | None:
    rows = file_rows(run)
    if not rows:
        return None
    table = Table(title="Files restored (read only)", title_justify="left", caption=caption(run),
                  caption_justify="left")
    for index, heading in enumerate(HEADINGS):
        table.add_column(heading, justify="left" if index < 3 else "right")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row.cells()))
    return table


def read_runs(text: str) -> list[tuple[int, int, int, bool]]:
    """A stored map (workloads/restore.map_rows) back to (logical, physical, length, shared)."""
    return [(int(r["logical"]), int(r["physical"]), int(r["length"]), r["shared"] == "1")
            for r in csv.DictReader(io.StringIO(text))]


def map_figure(name: str, runs: Sequence[tuple[int, int, int, bool]]):
    """The extent map: file offset across, disk offset up, one segment per run."""
    # Here, not at the top: the terminal's table of files needs no matplotlib (seconds to import).
    from matplotlib.lines import Line2D

    from backupbench.report import charts

    top = max((max(logical, physical) + length for logical, physical, length, _ in runs), default=0)
    unit, scale = ("GiB", float(units.GiB)) if top >= 2 * units.GiB else ("MiB", float(units.MiB))
    with charts.style(f"map-{name}"):
        figure = charts.new_figure(2.6)
        ax = figure.subplots()
        for logical, physical, length, shared in runs:
            ax.plot([logical / scale, (logical + length) / scale], [physical / scale, (physical + length) / scale],
                    color=palette.CLONED if shared else palette.READ, linewidth=1.6, solid_capstyle="butt")
        handles = [Line2D([], [], color=palette.READ, label="its own extents")]
        if any(shared for *_, shared in runs):
            handles.append(Line2D([], [], color=palette.CLONED, label="shared with other files (block clone)"))
        ax.legend(handles=handles, loc="upper left", fontsize=8, frameon=False)
        ax.set_xlabel(f"offset in the file ({unit})")
        ax.set_ylabel(f"place on the disk ({unit})")
        ax.set_title(f"{name}: one straight line = in one piece; each break = a seek", loc="left", fontsize=9)
    return figure


def files_html(run: RunRecord, folder: Path) -> str:
    """The files table, then each file's extent map (from the run folder's map CSV)."""
    from backupbench.report import charts

    rows = file_rows(run)
    if not rows:
        return ""
    body = page.table(HEADINGS, [[page.e(cell) for cell in row.cells()] for row in rows],
                      caption="Files restored (read only)", numeric_from=3)
    body += f'<p class="table-note">{page.e(caption(run))}</p>\n'
    for row in rows:
        path = folder / row.map_file
        if not row.map_file or not path.is_file():
            body += f'<p class="table-note">{page.e(row.path)}: its extent map is not in the run folder</p>\n'
            continue
        figure = map_figure(Path(row.path).name, read_runs(path.read_text()))
        shared = " Shared extents (block clones) are drawn purple." if row.figures.get("file_shared_extents") else ""
        body += page.figure(charts.inline_svg(figure, f"map-{row.map_file}", f"Extent map of {row.path}"),
                            f"Extent map of {row.path}: {row.figures['file_extents']:,.0f} extents, "
                            f"{row.figures['file_jumps']:,.0f} jumps.{shared}")
    return body
