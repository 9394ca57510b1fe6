"""`backupbench plan RECIPE`, `apply RECIPE --yes` and `cleanup`: recipes end to end."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from backupbench.cli.common import finished_runs, open_store, print_json, results_option, stderr, stdout
from backupbench.cli.progress import QuietReporter, RichReporter
from backupbench.devices.block import eligible, recheck_before_write
from backupbench.devices.blockfacts import BlockFacts
from backupbench.errors import RefusedError, ToolMissingError
from backupbench.layouts import capabilities
from backupbench.journal import journal_dir
from backupbench.paths import for_program
from backupbench.layouts.minio import find_minio
from backupbench.layouts.naming import DEFAULT_MOUNT_ROOT
from backupbench.plan import Plan, build, required_tools
from backupbench.recipe import model
from backupbench.report import plan_view
from backupbench.report.terminal import run_report
from backupbench.results.location import results_dir
from backupbench.results.model import new_run_id
from backupbench.runner.apply import ApplyHooks, apply
from backupbench.runner.cleanup import clean_journals
from backupbench.runner.pipeline import run_as_dict

ALL_TOOLS = ("lvcreate", "thin_check", "mdadm", "mkfs.xfs", "mkfs.ext4", "mkfs.btrfs", "btrfs", "zpool", "minio")


def which(tool: str) -> str | None:
    """PATH, and for MinIO also the project's .tools/bin where install-minio.sh builds it."""
    found = shutil.which(tool)
    if found or tool != "minio":
        return found
    try:
        return str(find_minio())
    except ToolMissingError:
        return None


class DeviceChecks:
    """Checks each device once for the plan, and keeps what it saw: right before the first
    write, the re-check compares the device with it (same disk, size, nothing new on it)."""

    def __init__(self) -> None:
        self.seen: dict[str, BlockFacts] = {}

    def reasons(self, path: str) -> list[str]:
        facts, reasons = eligible(path)
        self.seen[path] = facts
        return [f"{r.problem} ({r.fix})" for r in reasons]

    def recheck(self, devices: tuple[str, ...]) -> None:
        for device in devices:
            recheck_before_write(device, expected=self.seen.get(device))


def make_plan(recipe_path: Path, mount_root: Path) -> tuple[Plan, DeviceChecks]:
    recipe = model.load(recipe_path)
    # Mount points are handed to mkdir, mount and umount: absolute, and nothing they would misread.
    mount_root = Path(for_program(mount_root.expanduser().resolve()))
    caps = capabilities.collect(which=which, tools=tuple(dict.fromkeys((*ALL_TOOLS, *required_tools(recipe)))))
    checks = DeviceChecks()
    return build(recipe, new_run_id(), caps, checks.reasons, mount_root), checks


mount_root_option = click.option("--mount-root", type=click.Path(path_type=Path), default=DEFAULT_MOUNT_ROOT,
                                 show_default=True, help="Where layouts are mounted.")


@click.command("plan")
@click.argument("recipe", type=click.Path(path_type=Path))
@mount_root_option
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def plan_command(recipe: Path, mount_root: Path, as_json: bool) -> None:
    """Print the ordered steps and exact commands a recipe would run. Changes nothing.

    Exits 3 when a layout is refused, so scripts can check a recipe before `apply`."""
    plan, _ = make_plan(recipe, mount_root)
    if as_json:
        print_json(plan_view.as_dict(plan))
    else:
        stdout.print(plan_view.render(plan))
    if plan.refusals:
        raise click.exceptions.Exit(RefusedError.exit_code)


@click.command("apply")
@click.argument("recipe", type=click.Path(path_type=Path))
@click.option("--yes", is_flag=True, help="Confirm: format the recipe's devices (each must hold nothing).")
@mount_root_option
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON on stdout.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@results_option
def apply_command(recipe: Path, yes: bool, mount_root: Path, as_json: bool, quiet: bool, results: Path | None) -> None:
    """Provision each layout, run the workloads on it (monitored), tear it down; one stored run."""
    plan, checks = make_plan(recipe, mount_root)
    if plan.refusals:
        raise RefusedError("the recipe cannot run here: " + "; ".join(plan.refusals),
                           "see `backupbench plan RECIPE` for the whole plan")
    if not yes and any(step.layout.devices for step in plan.steps):
        raise RefusedError(f"{recipe} formats {', '.join(d for s in plan.steps for d in s.layout.devices)}",
                           "read `backupbench plan RECIPE`, then rerun with --yes")
    hooks = ApplyHooks(recheck=checks.recheck, announce=lambda message: stderr.print(f"  {message}", highlight=False),
                       on_closed=lambda run: finished_runs.append((open_store(results)[1], run.run_id)))
    directory = results_dir(results)
    if quiet:
        record = apply(plan, directory, QuietReporter(), hooks)
    else:
        with RichReporter(stderr) as reporter:
            record = apply(plan, directory, reporter, hooks)
    if as_json:
        print_json(run_as_dict(record))
    else:
        stdout.print(run_report(record))


@click.command("cleanup")
@results_option
def cleanup_command(results: Path | None) -> None:
    """Remove what runs killed outright (SIGKILL, power loss) left behind, from their journals.

    Only what a journal says the run created, and each only after a check that it is
    still the run's (its name carries the run id, its LVM tag, label or md name matches);
    the run is then stored as interrupted. Runs still going are not touched.
    """
    directory = journal_dir(results_dir(results))
    cleaned = clean_journals(directory)
    if not cleaned:
        stdout.print("Nothing to clean up.")
        return
    for item in cleaned:
        name = item.run_id or item.label
        if item.busy:
            stdout.print(f"{name}: skipped, still running ({item.busy})", markup=False)
            continue
        for line in item.report.removed:
            stdout.print(f"{name}: {line}", markup=False)
        for line in item.report.left_alone:
            stdout.print(f"{name}: {line}", markup=False)
        for line in item.report.failed:
            stdout.print(f"{name}: FAILED: {line}", markup=False)
        if item.marked_interrupted:
            stdout.print(f"{name}: stored as interrupted", markup=False)
        if not (item.report.removed or item.report.left_alone or item.report.failed):
            stdout.print(f"{name}: nothing was left", markup=False)
    if any(item.report.failed for item in cleaned):
        raise click.exceptions.Exit(1)
