"""What every bench shares: a figure as the median of its repeats with their spread, and the
one way a bench says the machine lacks what it needs.

Benches are scripts (`python bench/NAME.py`), so bench/ is first on their path and they import
this as `from _common import ...`. The leading underscore keeps it out of the benches the smoke
test (tests/integration/test_benches.py) finds.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, NoReturn

ROOT = Path(__file__).resolve().parents[1]
# Exit code of a bench that cannot run on this machine (automake's "skipped"); the smoke test
# skips it with the one line the bench printed on stderr.
CANNOT_RUN = 77


@dataclass(frozen=True)
class Spread:
    """The median of repeated figures and their range."""

    median: float
    low: float
    high: float
    count: int
    what: str = "runs"   # what was repeated: pairs, runs, rounds, windows

    def text(self, digits: int = 3, unit: str = "") -> str:
        """'0.981 (0.952-1.013, 5 pairs)': the median, then min-max and how many."""
        figure = f"{self.median:.{digits}f}{unit}"
        if self.count == 1:
            return f"{figure} (a single run, no spread)"
        return f"{figure} ({self.low:.{digits}f}-{self.high:.{digits}f}{unit}, {self.count} {self.what})"


def spread(values: Iterable[float], what: str = "runs") -> Spread:
    """Median, min and max of a bench's repeats (pairs, runs, rounds, windows); at least one."""
    figures = [float(v) for v in values]
    if not figures:
        raise ValueError("no figures to summarize: the bench measured nothing")
    return Spread(statistics.median(figures), min(figures), max(figures), len(figures), what)


def ratio_line(label: str, ratios: Iterable[float], goal: str = "", verdict: str = "", *, what: str = "runs",
               digits: int = 3) -> str:
    """The line the smoke test looks for: 'ratio LABEL: median (min-max, n runs)[; goal G][ verdict]'."""
    text = f"ratio {label}: {spread(ratios, what).text(digits)}"
    if goal:
        text += f"; goal {goal}"
    return f"{text} {verdict}" if verdict else text


def cannot_run(name: str, reason: str) -> NoReturn:
    """Stop: this machine lacks what the bench needs (one line saying what and how to get it)."""
    print(f"{name}: cannot run here: {reason}", file=sys.stderr)
    sys.exit(CANNOT_RUN)


def require(name: str, *, root: bool = False, tools: Iterable[str] = (), files: Iterable[Path] = ()) -> None:
    """cannot_run unless root (if asked), every tool on PATH and every file present."""
    if root and os.geteuid() != 0:
        cannot_run(name, "needs root")
    for tool in tools:
        if shutil.which(tool) is None:
            cannot_run(name, f"{tool} is not installed (make deps installs it)")
    for path in files:
        if not Path(path).exists():
            cannot_run(name, f"{path} is missing (make deps builds it)")


def require_built(name: str, *tools: str) -> None:
    """cannot_run unless MinIO ("minio") and every other tool the project builds (the S3 loader,
    the minio-go reference) is built: .tools/bin, $BACKUPBENCH_MINIO, an installed bundle, PATH."""
    from backupbench.errors import ToolMissingError
    from backupbench.layouts.minio import find_minio
    from backupbench.process import project_tool

    for tool in tools:
        try:
            find_minio() if tool == "minio" else project_tool(tool)
        except ToolMissingError:
            cannot_run(name, f"{tool} is not built (scripts/install-minio.sh builds it; make deps runs it)")


def alternated_pair(engine, reference, pair: int) -> dict[tuple[str, str], object]:
    """One pair of PUT+GET measurements, engine and reference, the one going first alternating
    with the pair's number so a drift of the machine favours neither: {(side name, op): figure}.
    Each side has `name`, `measure(op)` and `cleanup()`; both are cleaned up however it ends."""
    first, second = (engine, reference) if pair % 2 else (reference, engine)
    got: dict[tuple[str, str], object] = {}
    try:
        for side, op in ((first, "put"), (second, "put"), (second, "get"), (first, "get")):
            got[side.name, op] = side.measure(op)
    finally:
        engine.cleanup()
        reference.cleanup()
    return got


def lab_run(recipe_text: str, disks: str, rate: str, work: Path) -> tuple[float, Path]:
    """`backupbench lab` of a recipe with every disk at `rate`: (seconds end to end, the results
    folder it stored the run in). A failed lab run ends the bench with its last output."""
    path = work / "recipe.toml"
    path.write_text(recipe_text)
    results = work / f"results-{time.monotonic_ns()}"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "backupbench", "lab", str(path), "--disks", disks,
                           "--disk-rate", rate, "--results", str(results), "--work-dir", str(work), "--quiet"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        sys.exit(f"backupbench lab failed ({done.returncode}):\n{done.stdout[-3000:]}")
    return time.monotonic() - started, results
