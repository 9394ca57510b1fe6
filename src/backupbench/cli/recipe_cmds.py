"""`backupbench plan RECIPE`, `apply RECIPE --yes` and `cleanup`: recipes end to end."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Group
from rich.text import Text

from backupbench import plan as plan_mod
from backupbench.cli import options as cli_options
from backupbench.cli.common import finished_runs, open_store, results_option, stderr, stdout
from backupbench.cli.common import label_option, print_document, run_analysis
from backupbench.cli.progress import QuietReporter, RichReporter
from backupbench.analysis import gates
from backupbench.analysis.gates import Expectation
from backupbench.cli.common import Gate, expect_option, finish_measured, measured
from backupbench.errors import RefusedError
from backupbench.journal import journal_dir
from backupbench.recipe import model
from backupbench.report import plan_view
from backupbench.report.terminal import run_report
from backupbench.analysis.sweep import from_recipe_run
from backupbench.report.sweep import sweep_view
from backupbench.results.location import results_dir
from backupbench.results.model import new_run_id
from backupbench.runner import apply_hosts
from backupbench.runner.apply import ApplyHooks, apply
from backupbench.runner.cleanup import clean_journals
from backupbench.results import document


def _plan(recipe_path: Path, values: dict) -> tuple[plan_mod.Plan, plan_mod.DeviceChecks]:
    recipe = model.load(recipe_path)
    if values.get("mount_root"):
        values = {**values, "mount_root": str(Path(str(values["mount_root"])).expanduser().resolve())}
    options = cli_options.build(plan_mod.PlanOptions, cli_options.split(plan_mod.PlanOptions, values)[0])
    return plan_mod.make(recipe, new_run_id(), options, remote_check=apply_hosts.refusals)


def _remote_view(plan: plan_mod.Plan) -> Group:
    """A [hosts] recipe's plan: each workload and the machines it runs on (nothing is built)."""
    lines = [Text(f"Plan for recipe {plan.recipe.name!r} (run {plan.run_id}), on other machines", style="bold")]
    if plan.recipe.description:
        lines.append(Text(plan.recipe.description))
    for number, step in enumerate(plan.remote, 1):
        first, *rest = step.lines()
        lines += [Text(f"\n{number}. {first}", style="bold"), *(Text(f"  {line}") for line in rest)]
    lines += [Text(f"  REFUSED: {reason}", style="red") for reason in plan.refusals]
    lines.append(Text("\nEvery fio server and agent is checked before the first workload starts; nothing is built "
                      "or formatted here."))
    verdict = ("REFUSED: nothing will be run." if plan.refusals
               else "Nothing has been run. Run it with: backupbench apply RECIPE")
    lines.append(Text(verdict, style="red" if plan.refusals else "green"))
    return Group(*lines)


@click.command("plan")
@click.argument("recipe", type=click.Path(path_type=Path))
@cli_options.click_options(plan_mod.PlanOptions)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def plan_command(recipe: Path, as_json: bool, **values: object) -> None:
    """Print the ordered steps and exact commands a recipe would run. Changes nothing.

    Exits 3 when a layout is refused, so scripts can check a recipe before `apply`."""
    plan, _ = _plan(recipe, values)
    if as_json:
        print_document("plan", {**plan_view.as_dict(plan), "hosts": [step.as_dict() for step in plan.remote]})
    else:
        stdout.print(_remote_view(plan) if plan.recipe.hosts is not None else plan_view.render(plan))
    if plan.refusals:
        raise click.exceptions.Exit(RefusedError.exit_code)


@click.command("apply")
@click.argument("recipe", type=click.Path(path_type=Path))
@click.option("--yes", is_flag=True, help="Confirm: format the recipe's devices (each must hold nothing).")
@cli_options.click_options(plan_mod.PlanOptions)
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON on stdout.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@expect_option
@label_option
@results_option
def apply_command(recipe: Path, yes: bool, as_json: bool, quiet: bool, expectations: list[Expectation],
                  label: str, results: Path | None, **values: object) -> None:
    """Provision each layout, run the workloads on it (monitored), tear it down; one stored run.

    With repeats, layouts that use no device in common are built together and measured in
    rounds, one sample of each in turn, the order reversed each round (the run's note says so).

    A recipe with [hosts] builds nothing: its workloads run on those machines one after another
    (as run --hosts / --agents), every one checked first; no --yes needed."""
    plan, checks = _plan(recipe, values)
    if plan.refusals:
        raise RefusedError("the recipe cannot run here: " + "; ".join(plan.refusals),
                           "see `backupbench plan RECIPE` for the whole plan")
    if expectations:  # a typo fails now, before any layout is formatted and measured
        gates.check_before_run(expectations, plan.operations(), f"recipe {plan.recipe.name!r}")
    if not yes and any(step.layout.devices for step in plan.steps):
        raise RefusedError(f"{recipe} formats {', '.join(d for s in plan.steps for d in s.layout.devices)}",
                           "read `backupbench plan RECIPE`, then rerun with --yes")
    hooks = ApplyHooks(recheck=checks.recheck, announce=lambda message: stderr.print(f"  {message}", highlight=False),
                       on_closed=lambda run: finished_runs.append((open_store(results)[1], run.run_id)),
                       label=label)
    directory = results_dir(results)
    if quiet:
        record, left = measured(lambda: apply(plan, directory, QuietReporter(), hooks))
    else:
        with RichReporter(stderr) as reporter:
            record, left = measured(lambda: apply(plan, directory, reporter, hooks))
    gate = Gate.check(expectations, record)
    if as_json:
        print_document("run", {**document.run_body(record, run_analysis(record, results=directory)), **gate.json()})
    else:
        stdout.print(run_report(record))
        for swept in from_recipe_run(record):  # the recipe's `sweep` keys, each as its grid
            stdout.print(sweep_view(swept))
        gate.print_table()
    finish_measured(gate, left)


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
        if item.refused:
            stdout.print(f"{name}: FAILED: {item.refused}", markup=False)
        for line in item.report.removed:
            stdout.print(f"{name}: {line}", markup=False)
        for line in item.report.left_alone:
            stdout.print(f"{name}: {line}", markup=False)
        for line in item.report.failed:
            stdout.print(f"{name}: FAILED: {line}", markup=False)
        if item.marked_interrupted:
            stdout.print(f"{name}: stored as interrupted", markup=False)
        if not (item.report.removed or item.report.left_alone or item.report.failed or item.refused):
            stdout.print(f"{name}: nothing was left", markup=False)
    if any(item.report.failed or item.refused for item in cleaned):
        raise click.exceptions.Exit(1)
