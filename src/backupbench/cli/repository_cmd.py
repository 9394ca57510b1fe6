"""`backupbench size repository`: which layout, how big, for a backup policy on candidate disks.

It sits with the other sizing answers (`size capacity`, `size window`, `size rebuild`), whose
models it joins, rather than as a `plan-repository` of its own: `backupbench plan` already names
what a recipe's `apply` will run, and a second "plan" would blur the two."""

from __future__ import annotations

from pathlib import Path

import click

from backupbench.cli import options as cli_options
from backupbench.cli.common import open_store, print_document, results_option, stdout
from backupbench.errors import ExpectationMissed, InputError
from backupbench.recipe import model as recipe_model
from backupbench.report.repository import repository_report
from backupbench.sizing.aged_speeds import age_days
from backupbench.sizing.measured_speeds import MeasuredLayout, assign, measured_layouts, parse_pin
from backupbench.sizing.capacity import LayoutSpec
from backupbench.sizing.plan_model import RepositoryPlan
from backupbench.sizing.policy import RepositoryOptions
from backupbench.sizing.recipe_plan import recipe_candidates
from backupbench.sizing.repository_plan import plan_repository

# What a recipe's [policy] cannot say: the candidates are its layouts.
NOT_WITH_RECIPE = ("layout", "stripes", "vdevs", "draid_data", "draid_spares", "set_size", "parity")


def _measured(options: RepositoryOptions, results: Path | None, candidates: list[str]) -> dict[str, MeasuredLayout]:
    if not options.from_run:
        if options.at_age is not None:
            raise InputError("--at-age without --from-run: the age is an aging run's", "add --from-run RUN of an "
                             "aging run (backupbench run --workload aging), or drop --at-age")
        return {}
    _, store = open_store(results)
    runs = []
    for text in options.from_run:
        pin, ref = parse_pin(text)
        runs.append((pin, ref, measured_layouts(store.load_run(ref), age_days(options.at_age))))
    chosen = assign(candidates, runs)
    if options.at_age is not None and not any(m.aged for m in chosen.values()):
        raise InputError("--at-age: no run given to --from-run aged a repository", "add an aging run "
                         "(backupbench run --workload aging), or drop --at-age")
    return chosen


def _from_recipe(values: dict[str, object]) -> tuple[RepositoryOptions, list[LayoutSpec], list[str]]:
    """The recipe's [policy] under the flags given as well, and its layouts as the candidates."""
    path = Path(str(values["recipe"]))
    recipe = recipe_model.load(path)
    if recipe.policy is None:
        raise InputError(f"{path} has no [policy] table", "add one (see docs/sizing.md, From a recipe), or give the "
                         "policy as flags")
    given = [name for name in NOT_WITH_RECIPE if values.get(name) not in (None, False)]
    if given:
        raise InputError(f"--{given[0].replace('_', '-')} with --recipe: the candidates are the recipe's layouts",
                         "drop it, or leave out --recipe and give --layout")
    table = recipe.policy
    merged = dict(values)
    for name, value in table.model_dump(include=table.model_fields_set).items():
        if name in RepositoryOptions.model_fields and merged.get(name) in (None, False):
            merged[name] = (value,) if name == "disk_size" else value
    options = cli_options.build(RepositoryOptions, merged)
    if len(options.disk_size or ()) > 1:
        raise InputError("--disk-size: one size for every disk of the recipe's layouts", "e.g. --disk-size 16TB")
    disk_size = options.disk_size[0] if options.disk_size else table.disk_size
    specs, notes = recipe_candidates([entry.model_dump(mode="json") for entry in recipe.layout],
                                     options.disks or table.disks, disk_size)
    return options, specs, notes


def _plan(values: dict[str, object], results: Path | None) -> RepositoryPlan:
    if values.get("recipe"):
        options, specs, notes = _from_recipe(values)
    else:
        options = cli_options.build(RepositoryOptions, values)
        if not options.layout or not options.disk_size:
            missing = "--layout" if not options.layout else "--disk-size"
            raise InputError(f"{missing}: which candidates?", "e.g. --layout raid6,draid2 --disks 24 --disk-size "
                             "16TB, or --recipe a recipe with a [policy] table")
        specs, notes = options.specs(), []
    plan = plan_repository(options.policy(), options.disk(), specs,
                           _measured(options, results, [spec.layout for spec in specs]))
    return plan.model_copy(update={"notes": [*plan.notes, *notes]}) if notes else plan


@click.command("repository")
@cli_options.click_options(RepositoryOptions)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON (exact bytes, seconds, bytes/s).")
@results_option
def repository_command(as_json: bool, results: Path | None, **values: object) -> None:
    """Which layout, how big: a repository plan from a backup policy, the disks and their speeds.

    The restore points the policy keeps (per kind, per year of the horizon), and for each
    candidate layout: usable capacity and fill, the day's backup job against the window, the
    restore against the RTO, the hours a disk failure leaves it with reduced redundancy; the
    candidates ranked, and what would make a rejected one pass. Speeds are measured
    (--from-run) or from the per-disk model (--disk-speed), which is said to be uncertain.
    Exits 5 when no candidate meets the policy.

    Example: backupbench size repository --protected 50TB --change-rate 5% --dailies 30 --weeklies 8
    --monthlies 12 --yearlies 3 --layout raid6,raidz2,draid2,minio-ec --draid-spares 1 --disks 24
    --disk-size 16TB --disk-speed 250MB/s

    Or from a recipe: backupbench size repository --recipe lab.toml --from-run latest
    """
    plan = _plan(values, results)
    if as_json:
        print_document("size.repository", plan.model_dump(mode="json"))
    else:
        for part in repository_report(plan):
            stdout.print(part)
    if plan.verdict.recommended is None:
        raise ExpectationMissed(plan.verdict.sentence, "see what would change it, in the plan")
