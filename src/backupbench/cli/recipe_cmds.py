"""`backupbench plan RECIPE`, `apply RECIPE --yes` and `cleanup`: recipes end to end."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from backupbench.cli.common import print_json, results_option, stderr, stdout
from backupbench.cli.progress import QuietReporter, RichReporter
from backupbench.devices.block import eligible, recheck_before_write
from backupbench.devices.blockfacts import BlockFacts
from backupbench.errors import RefusedError, ToolMissingError
from backupbench.layouts import capabilities
from backupbench.layouts.executor import undo_actions
from backupbench.layouts.journal import Journal, JournalBusy, journal_dir, open_journals, pending
from backupbench.layouts.minio import find_minio
from backupbench.layouts.naming import DEFAULT_MOUNT_ROOT
from backupbench.plan import Plan, build, required_tools
from backupbench.recipe import model
from backupbench.report import plan_view
from backupbench.report.terminal import run_report
from backupbench.results.location import results_dir
from backupbench.results.model import new_run_id
from backupbench.runner.apply import ApplyHooks, apply
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
    hooks = ApplyHooks(recheck=checks.recheck, announce=lambda message: stderr.print(f"  {message}", highlight=False))
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
    """Finish teardowns a crash left behind; removes only objects that carry backupbench's tag."""
    directory = journal_dir(results_dir(results))
    journals = list(open_journals(directory))
    if not journals:
        stdout.print("Nothing to clean up.")
        return
    for path in journals:
        try:
            journal = Journal.at(path)
        except JournalBusy as busy:
            stdout.print(f"skipped: {busy}")
            continue
        run_and_layout = journal.label
        report = undo_actions(pending(path), journal)
        for line in report.undone:
            stdout.print(f"{run_and_layout}: undone: {line}")
        for line in report.skipped:
            stdout.print(f"{run_and_layout}: left alone (not ours): {line}")
        for line in report.failed:
            stdout.print(f"{run_and_layout}: FAILED: {line}")
        if report.failed:
            journal.release()
        else:
            journal.close()
