"""`backupbench export-fio`: plain fio job files, to reproduce any figure with fio alone;
`backupbench export --prometheus`: stored runs' figures for a Prometheus pushgateway.

Two commands rather than one group: `export-fio` writes what a run *would* do and needs no
stored run, `export` writes what stored runs measured; a group would have changed the
`export-fio` command line people already use."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from backupbench.cli import options as cli_options
from backupbench.cli.common import open_store, results_option
from backupbench.results import prometheus
from backupbench.errors import InputError, NotFoundError
from backupbench.results.location import run_folder
from backupbench.workloads.kb2014 import (KB2014_BLOCK_SIZE, LAYOUT, OPERATION_NAMES, OPERATIONS, Kb2014Options,
                                          layout_job, needs_layout, operation_job, select)


@click.command("export-fio")
@click.argument("operation_names", nargs=-1, metavar="[OPERATION]...")
@click.option("--path", "directory", type=click.Path(path_type=Path), default=Path("."), show_default=True,
              help="Directory the test file goes in.")
@click.option("--run", "run_ref", default=None, metavar="RUN", help="Export the exact job files of a stored run.")
@cli_options.click_options(Kb2014Options)
@results_option
def export_fio_command(operation_names: tuple[str, ...], directory: Path, run_ref: str | None,
                       results: Path | None, **values: object) -> None:
    """Print fio job files for the given operations (default: all), preceded by the layout job.

    Save the output as suite.fio and run `fio suite.fio`: the jobs run one after another
    (stonewall), exactly as backupbench runs them; the last one removes the test file (unlink=1).
    fio's own --runtime does not change a job's runtime=: export again with --runtime, or
    `sed -i 's/^runtime=.*/runtime=30s/' suite.fio` (the file's first lines say so too).
    """
    unknown = [name for name in operation_names if name not in OPERATIONS]
    if unknown:
        raise InputError(f"unknown operation {unknown[0]!r}", "choose from " + ", ".join(OPERATION_NAMES))
    if run_ref:
        click.echo(_stored_job_files(results, run_ref, operation_names), nl=False)
        return
    if operation_names:
        values = {**values, "operations": ",".join(operation_names)}
    options = cli_options.build(Kb2014Options, values).with_block_default(KB2014_BLOCK_SIZE)
    test_file = directory.expanduser().resolve() / "backupbench-export.dat"
    operations = select(options.operations)
    jobs = ([layout_job(options, test_file)] if needs_layout(operations) else []) + [
        operation_job(op, options, test_file) for op in operations]
    jobs = [dataclasses.replace(job, stonewall=True, unlink=job is jobs[-1]) for job in jobs]
    click.echo(_preamble(test_file) + "\n".join(job.text() for job in jobs), nl=False)


def _preamble(test_file: Path | str) -> str:
    """fio comments heading an exported suite: how to run it, and the runtime override that works
    (checked with fio 3.33: `fio --runtime=N suite.fio` leaves every job's runtime= as it is)."""
    return (f"; Run: fio suite.fio. The jobs run one after another; the last removes {test_file} (unlink=1).\n"
            "; fio --runtime does not override a job's runtime=. To change it, export again with\n"
            "; `backupbench export-fio --runtime 30s`, or: sed -i 's/^runtime=.*/runtime=30s/' suite.fio\n\n")


def _stored_job_files(results: Path | None, run_ref: str, operations: tuple[str, ...]) -> str:
    directory, store = open_store(results)
    run = store.load_run(run_ref)
    folder = run_folder(directory, run.run_id)
    names = ([LAYOUT] if (folder / f"{LAYOUT}.fio").exists() else []) + [
        op.name for op in run.operations if not operations or op.name in operations]
    texts = []
    for number, name in enumerate(names, 1):
        job_file = folder / f"{name}.fio"
        if not job_file.exists():
            raise NotFoundError(f"run {run.run_id} has no job file {job_file}")
        texts.append(job_file.read_text().rstrip("\n") + "\nstonewall=1\n" + ("unlink=1\n" if number == len(names) else ""))
    return _preamble("the test file") + "\n".join(texts)


@click.command("export")
@click.argument("run_refs", nargs=-1, metavar="[RUN]...")
@click.option("--prometheus", "as_prometheus", is_flag=True,
              help="Prometheus text exposition format: one gauge per figure in base units (seconds, bytes, "
                   "ratios), labelled run_id, label, kind, phase, device.")
@results_option
def export_command(run_refs: tuple[str, ...], as_prometheus: bool, results: Path | None) -> None:
    """Print stored runs' figures for another tool (RUN: an id, a unique prefix, a --label, or 'latest', the default).

    Push them: backupbench export --prometheus | curl --data-binary @- http://PUSHGATEWAY:9091/metrics/job/backupbench
    """
    if not as_prometheus:
        raise InputError("name the format to export", "add --prometheus")
    _, store = open_store(results)
    loaded = (store.load_run(ref) for ref in run_refs or ("latest",))
    runs = list({run.run_id: run for run in loaded}.values())  # 'latest' and its id are one run
    click.echo(prometheus.exposition(runs), nl=False)
