"""`backupbench size repository`: which layout, how big, for a backup policy on candidate disks.

It sits with the other sizing answers (`size capacity`, `size window`, `size rebuild`), whose
models it joins, rather than as a `plan-repository` of its own: `backupbench plan` already names
what a recipe's `apply` will run, and a second "plan" would blur the two."""

from __future__ import annotations

from pathlib import Path

import click

from backupbench.cli import options as cli_options
from backupbench.cli.common import open_store, print_document, results_option, stdout
from backupbench.errors import ExpectationMissed
from backupbench.report.repository import repository_report
from backupbench.sizing.measured_speeds import MeasuredLayout, assign, measured_layouts, parse_pin
from backupbench.sizing.policy import RepositoryOptions
from backupbench.sizing.repository_plan import plan_repository


def _measured(options: RepositoryOptions, results: Path | None, candidates: list[str]) -> dict[str, MeasuredLayout]:
    if not options.from_run:
        return {}
    _, store = open_store(results)
    runs = []
    for text in options.from_run:
        pin, ref = parse_pin(text)
        runs.append((pin, ref, measured_layouts(store.load_run(ref))))
    return assign(candidates, runs)


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
    """
    options = cli_options.build(RepositoryOptions, values)
    specs = options.specs()
    plan = plan_repository(options.policy(), options.disk(), specs,
                           _measured(options, results, [spec.layout for spec in specs]))
    if as_json:
        print_document("size.repository", plan.model_dump(mode="json"))
    else:
        for part in repository_report(plan):
            stdout.print(part)
    if plan.verdict.recommended is None:
        raise ExpectationMissed(plan.verdict.sentence, "see what would change it, in the plan")
