"""`backupbench lab [RECIPE]`: run a recipe (or any command) in a throwaway VM with throttled disks."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import click
from rich.console import Console

from backupbench.cli import options as cli_options
from backupbench.cli.common import results_option, stderr
from backupbench.errors import InputError
from backupbench.lab.options import LabOptions
from backupbench.journal import JOURNAL_DIR_ENV, Journal, journal_dir
from backupbench.lab import zfs_module
from backupbench.lab.image import resolve_packages
from backupbench.lab.vm import WORK_FOLDER, LabVM
from backupbench.plan import plan_layouts
from backupbench.recipe import model
from backupbench.results.location import results_dir
from backupbench.results.model import OWNER_ENV, current_owner, new_run_id
from backupbench import artefacts
from backupbench.runner.pipeline import journalled
from backupbench.units import format_duration


class StepPrinter:
    """One line per step on stderr with the time since start; a spinner while a step runs."""

    def __init__(self, console: Console, quiet: bool = False):
        self.console = console
        self.quiet = quiet
        self.started = time.monotonic()
        self._status = None

    def __call__(self, message: str) -> None:
        if self.quiet:
            return
        self.console.print(f"[dim]{time.monotonic() - self.started:6.1f}s[/dim] {message}", highlight=False)
        if self._status is not None:
            self._status.update(message)

    def __enter__(self) -> "StepPrinter":
        if not self.quiet and self.console.is_terminal:
            self._status = self.console.status("starting the lab VM")
            self._status.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_spinner()

    def stop_spinner(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


def guest_terminal_env() -> dict[str, str]:
    """The guest's output ends up on our stdout: tell its programs how wide that is."""
    env = {"COLUMNS": str(shutil.get_terminal_size((140, 40)).columns)}
    if sys.stdout.isatty() and os.environ.get("TERM"):
        env["TERM"] = os.environ["TERM"]
    return env


@dataclass
class GuestJob:
    """What runs in the guest: the command, how it is shown, where, the host folders shared,
    and the kernel features its layouts need (the lab checks its image has them)."""

    command: list[str] | str
    shown: str
    cwd: str
    shares: list[Path]
    kernel_needs: frozenset[str] = frozenset()


def _kernel_needs(recipe: model.Recipe) -> frozenset[str]:
    layouts = plan_layouts(recipe, "lab-check")
    return frozenset(req.check.partition(":")[2] for layout in layouts for req in layout.requirements
                     if req.check.startswith("kernel:"))


def _guest_job(recipe: Path | None, command: str | None, results: Path | None) -> GuestJob:
    if (recipe is None) == (command is None):
        raise InputError("give a RECIPE or --command, not both" if recipe else "give a RECIPE or --command",
                         "e.g. backupbench lab --command 'lvs' or backupbench lab recipe.toml")
    if recipe is None:
        shares = []
        if results is not None:
            shares.append(results_dir(results))
        return GuestJob(str(command), str(command), os.getcwd(), shares)
    recipe = recipe.expanduser().resolve()
    loaded = model.load(recipe)  # a bad recipe fails here in a second, not after the VM booted
    if loaded.hosts is not None:
        # Its workloads run on other machines: a guest behind QEMU's NAT could not reach them.
        raise InputError(f"{recipe} runs on [hosts] and builds nothing: the lab VM has no use for it",
                         f"run it from here: backupbench apply {recipe}")
    store = results_dir(results)
    apply = ["apply", str(recipe), "--yes", "--results", str(store)]
    return GuestJob([sys.executable, "-m", "backupbench", *apply], shlex.join(["backupbench", *apply]), "/", [store],
                    _kernel_needs(loaded))


def _build_zfs(steps: "StepPrinter") -> int:
    started = time.monotonic()
    kernel_package = resolve_packages()[0]
    module = zfs_module.build(kernel_package, progress=steps)
    steps(f"ZFS {module.version} for the guest kernel {module.kernel_release}: {module.directory} "
          f"({format_duration(time.monotonic() - started)})")
    return 0


def _run_in_vm(vm: LabVM, job: GuestJob, options: LabOptions, steps: StepPrinter) -> int:
    for note in vm.notes:
        steps(f"[yellow]note:[/yellow] {note}")
    steps(f"running in the VM: {job.shown}")
    steps.stop_spinner()

    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    # The guest's journals stay in the guest: they name its disks (/dev/vda is the host's
    # system disk), and the whole VM with its disks is thrown away anyway. The guest's runs
    # belong to this process: if it dies, they are not running any more.
    env = {**guest_terminal_env(), JOURNAL_DIR_ENV: "/run/backupbench-journal", OWNER_ENV: current_owner()}
    result = vm.run(job.command, timeout=options.timeout, stream=write, env=env, cwd=job.cwd,
                    tty=sys.stdout.isatty())
    verdict = "finished" if result.returncode == 0 else f"[red]failed (exit {result.returncode})[/red]"
    cpu = "" if result.guest_cpu_busy is None else f", guest CPU {result.guest_cpu_busy:.0%} busy"
    steps(f"{verdict} in {format_duration(result.seconds)}{cpu}; stopping the VM")
    if result.cpu_saturated:
        steps("[yellow]warning:[/yellow] the guest's CPU was saturated: under TCG the emulator, not the "
              "throttled disks, may have set the pace; lower --disk-rate so that the disks bind")
    return result.returncode


@click.command("lab")
@click.argument("recipe", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--command", "command", metavar="CMD",
              help="Run this shell command in the VM instead of a recipe, e.g. --command 'lvs'.")
@cli_options.click_options(LabOptions)
@click.option("--quiet", is_flag=True, help="No progress lines, only the guest's output.")
@click.option("--build-zfs", is_flag=True,
              help="Build the ZFS module for the guest's kernel with DKMS (once, a few minutes; "
                   "scripts/install-zfs.sh runs this) and exit.")
@results_option
def lab_command(recipe: Path | None, command: str | None, quiet: bool, build_zfs: bool, results: Path | None,
                **values: object) -> int:
    """Run RECIPE (or --command) as root in a throwaway QEMU VM whose virtual disks are throttled.

    The VM boots Debian's kernel and sees this machine's files read-only (changes stay in the
    VM), so LVM, mdadm, mkfs and this backupbench run there as they would on a real server.
    RECIPE runs as `backupbench apply RECIPE --yes --results DIR`; DIR is shared into the VM
    at the same path, so its results land in the usual store. The VM and its disk images are
    removed at the end, also on errors and Ctrl-C.
    """
    if build_zfs:
        if recipe is not None or command is not None:
            raise InputError("--build-zfs builds the module and exits: give it no RECIPE or --command")
        return _build_zfs(StepPrinter(stderr, quiet))
    job = _guest_job(recipe, command, results)
    options = cli_options.build(LabOptions, values)
    for share in job.shares:
        share.mkdir(parents=True, exist_ok=True)
    steps = StepPrinter(stderr, quiet)
    lab_id = f"lab-{new_run_id()}"
    work_name = WORK_FOLDER.of(lab_id)
    with steps, journalled(Journal(journal_dir(results_dir(results)), lab_id)) as journal:
        work_parent = options.work_dir.expanduser().resolve()
        work_id = journal.will_create(artefacts.tree(work_parent / work_name, lab_id, WORK_FOLDER.what))
        vm = LabVM(options.disk_specs(), throttle=options.throttle(), memory=options.memory, cpus=options.cpus,
                   shares=job.shares, work_parent=work_parent, keep_images=options.keep_images, progress=steps,
                   work_name=work_name, needs=job.kernel_needs, disk_model=options.seeking_model())
        if options.keep_images:
            journal.removed(work_id, "kept (--keep-images)")
        with vm:
            returncode = _run_in_vm(vm, job, options, steps)
        steps("VM stopped" + ("" if options.keep_images else ", disk images removed"))
    return returncode
