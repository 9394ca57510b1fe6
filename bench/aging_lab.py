"""The repository over its life in the lab, on disks that seek: how fast the newest full restores
on the last simulated day against day one, for each backup method, in rounds.

Usage (root): python bench/aging_lab.py [--rounds 3] [--days 126] [--full-size 256MiB]
                                        [--layouts xfs] [--work-dir DIR]

`backupbench lab` runs examples/repository-over-its-life.toml (ext4:
repository-over-its-life-ext4.toml) with the layouts asked for (xfs, btrfs, zfs, ext4; each on a
virtual disk of its own, served through the disk model: `--disk-model hdd`, a 7,200 rpm disk),
its two aging workloads (forward incremental with a weekly synthetic full, forever-forward with a
daily merge; block clone on all but ext4) measured on day 0 and the last day only, and
`repeat = ROUNDS`: each workload's whole simulated life played ROUNDS times on each layout, a new
repository each time. The reference is in the same run: day one's restore of the same
repository. For each layout, method and restore (KB2014's sequential and random, of the newest
full): the last day's MiB/s / day one's, one ratio per round, as the median with the min-max; the
disk model's projection of the same files (`model_*`, the files' extent maps on a 250 MB/s disk
with 8 ms a jump) beside it. Exits 0 when it measured; no goal (it is the figure the issue asked
for).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:   # Python 3.10
    import tomli as tomllib

from _common import ROOT, ratio_line, require
from backupbench.analysis.aging import MODEL, RESTORES, aging_series
from backupbench.recipe.naming import workload_group
from backupbench.results.location import store_file
from backupbench.results.store import Store
from backupbench.units import MiB, parse_size

EXAMPLES = {"clone": ROOT / "examples" / "repository-over-its-life.toml",
            "copy": ROOT / "examples" / "repository-over-its-life-ext4.toml"}
LAYOUTS = {"xfs": "clone", "btrfs": "clone", "zfs": "clone", "ext4": "copy"}
DISK = "2GiB"


def toml_value(value: object) -> str:
    """The few TOML values a recipe here holds (text, numbers, booleans, lists, inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{key} = {toml_value(item)}" for key, item in value.items()) + " }"
    raise TypeError(f"no TOML for {value!r}")


def recipe_text(example: Path, layouts: list[str], days: int, full_size: str, rounds: int) -> str:
    """The example with only `layouts`, each moved onto the next virtual disk, measured on day 0
    and the last day, and every workload repeated `rounds` times."""
    recipe = tomllib.loads(example.read_text())
    chosen = [layout for layout in recipe["layout"] if layout["name"] in layouts]
    disks = [f"/dev/vd{chr(ord('a') + index)}" for index in range(len(chosen))]
    for layout, disk in zip(chosen, disks):
        layout["devices"] = [disk]
    lines = [f"{key} = {toml_value(recipe[key])}" for key in ("name", "description")]
    lines.append(f"devices = {toml_value(disks)}")
    for table, entries in (("layout", chosen), ("workload", recipe["workload"])):
        for entry in entries:
            if table == "workload":
                entry.update(days=days, measure_every=days, full_size=full_size, repeat=rounds)
            lines += ["", f"[[{table}]]"] + [f"{key} = {toml_value(value)}" for key, value in entry.items()]
    return "\n".join(lines) + "\n"


def run_lab(text: str, disks: int, work: Path) -> tuple[float, Path]:
    """`backupbench lab` of the recipe on `disks` seeking disks: (seconds, the results folder)."""
    path = work / f"recipe-{time.monotonic_ns()}.toml"
    path.write_text(text)
    results = work / f"results-{time.monotonic_ns()}"
    started = time.monotonic()
    # The lab's step lines go to the terminal: each round plays the whole simulated life.
    done = subprocess.run([sys.executable, "-m", "backupbench", "lab", str(path), "--disks", f"{disks}x{DISK}",
                           "--disk-model", "hdd", "--memory", "2GiB", "--results", str(results),
                           "--work-dir", str(work)], stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"backupbench lab failed ({done.returncode}):\n{done.stdout[-3000:]}")
    return time.monotonic() - started, results


def method_names(run) -> dict[str, str]:
    """'xfs/1-aging' -> 'xfs forward-synthetic': each series by its layout and its workload's method."""
    workloads = run.settings["recipe"]["workload"]
    return {workload_group(layout["name"], index, "aging", len(workloads)):
            f"{layout['name']} {workload['method']}"
            for layout in run.settings["recipe"]["layout"] for index, workload in enumerate(workloads)}


def report(results: Path) -> list[str]:
    """A table of each series' restores and the ratio lines, from the stored run."""
    store = Store(store_file(results))
    [run] = store.list_runs()
    run = store.load_run(run.run_id)
    names = method_names(run)
    lines = []
    print(f"{'layout, method':<28} {'restore':<19} {'day':>4} {'MiB/s (median)':>15} {'samples':>24} {'model':>7}")
    for series in aging_series(run):
        first, last = series.days[0], series.days[-1]
        for operation in RESTORES:
            before, after = first.restore(operation), last.restore(operation)
            if before is None or after is None:
                continue
            for day, op in ((first.day, before), (last.day, after)):
                samples = ", ".join(f"{value / MiB:.1f}" for value in op.sample_values("effective_bw"))
                model = op.figures.get(MODEL[operation])
                print(f"{names.get(series.group, series.group):<28} {operation:<19} {day:>4} {op.figures['effective_bw'] / MiB:>15.1f} "
                      f"{samples:>24} {model / MiB if model else float('nan'):>7.1f}")
            # Round i of the last day against round i of day one: the same repository's life.
            ratios = [late / early for late, early in zip(after.sample_values("effective_bw"),
                                                          before.sample_values("effective_bw"))]
            label = f"{names.get(series.group, series.group)}, newest full {operation} day {last.day} / day {first.day}"
            lines.append(ratio_line(label, ratios, what="rounds"))
            model_before, model_after = before.figures.get(MODEL[operation]), after.figures.get(MODEL[operation])
            if model_before and model_after:
                lines.append(f"  the disk model's projection of the same files: {model_after / model_before:.3f}")
    return lines


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="times each workload's whole life is played")
    parser.add_argument("--days", type=int, default=126, help="simulated days after the first full")
    parser.add_argument("--full-size", default="256MiB", help="the first full as stored")
    parser.add_argument("--layouts", default="xfs", help="comma-separated: xfs, btrfs, zfs, ext4")
    parser.add_argument("--work-dir", type=Path, default=None)
    args = parser.parse_args()
    args.rounds = max(1, args.rounds)
    args.layouts = [name.strip() for name in args.layouts.split(",") if name.strip()]
    unknown = [name for name in args.layouts if name not in LAYOUTS]
    if unknown or not args.layouts:
        parser.error(f"--layouts: {', '.join(unknown) or 'none given'}; choose from {', '.join(LAYOUTS)}")
    parse_size(args.full_size)
    return args


def main() -> int:
    args = parse_args()
    require("aging_lab", root=True, tools=("qemu-system-x86_64", "busybox", "depmod", "dpkg-deb", "nbdkit"))
    work = Path(tempfile.mkdtemp(prefix="bench-aging-lab-", dir=args.work_dir))
    lines = []
    try:
        for kind, example in EXAMPLES.items():
            layouts = [name for name in args.layouts if LAYOUTS[name] == kind]
            if not layouts:
                continue
            text = recipe_text(example, layouts, args.days, args.full_size, args.rounds)
            wall, results = run_lab(text, len(layouts), work)
            print(f"{example.name} on {', '.join(layouts)}: {args.days} simulated days, full {args.full_size}, "
                  f"{args.rounds} rounds, seeking disks: {wall:.0f} s")
            lines += report(results)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
