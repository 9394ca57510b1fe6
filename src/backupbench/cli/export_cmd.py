"""`backupbench export-fio`: plain fio job files, to reproduce any figure with fio alone;
`backupbench export --prometheus`: stored runs' figures for a Prometheus pushgateway.

Two commands rather than one group: `export-fio` writes what a run *would* do and needs no
stored run, `export` writes what stored runs measured; a group would have changed the
`export-fio` command line people already use."""

from __future__ import annotations

import dataclasses
import secrets
from pathlib import Path

import click

from backupbench.cli import options as cli_options
from backupbench.cli.common import open_store, results_option
from backupbench.results import prometheus
from backupbench.errors import InputError, NotFoundError
from backupbench.results.location import run_folder
from backupbench.workloads.fio_workload import test_file_name
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
    The test file's name is new with each export, so the suite never writes or removes a file
    that was there before.
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
    test_file = _new_test_file(directory.expanduser().resolve())
    operations = select(options.operations)
    jobs = ([layout_job(options, test_file)] if needs_layout(operations) else []) + [
        operation_job(op, options, test_file) for op in operations]
    jobs = [dataclasses.replace(job, stonewall=True, unlink=job is jobs[-1]) for job in jobs]
    click.echo(_preamble(test_file) + "\n".join(job.text() for job in jobs), nl=False)


def _new_test_file(directory: Path) -> Path:
    """A name no file in `directory` has: the suite writes the file and its last job removes it
    (unlink=1), and fio has no option to refuse a file that exists (exec_prerun's failure is
    ignored, fio 3.33). A fixed name overwrote, then deleted, a user's file of that name."""
    if directory.exists() and not directory.is_dir():
        raise InputError(f"--path {directory} is not a directory", "name the directory the test file goes in")
    for _ in range(8):
        candidate = directory / f"backupbench-export-{secrets.token_hex(6)}.dat"
        if not candidate.exists() and not candidate.is_symlink():
            return candidate
    raise InputError(f"cannot find a file name that is free in {directory}", "name another --path")


def _preamble(test_file: Path | str) -> str:
    """fio comments heading an exported suite: how to run it, and the runtime override that works
    (checked with fio 3.33: `fio --runtime=N suite.fio` leaves every job's runtime= as it is)."""
    return (f"; Run: fio suite.fio. The jobs run one after another; the last removes {test_file} (unlink=1),\n"
            "; a name made for this suite: no file had it when it was exported. Keep it so if you edit the file.\n"
            "; fio --runtime does not override a job's runtime=. To change it, export again with\n"
            "; `backupbench export-fio --runtime 30s`, or: sed -i 's/^runtime=.*/runtime=30s/' suite.fio\n\n")


def _stored_job_files(results: Path | None, run_ref: str, operations: tuple[str, ...]) -> str:
    directory, store = open_store(results)
    run = store.load_run(run_ref)
    folder = run_folder(directory, run.run_id)
    names = ([LAYOUT] if (folder / f"{LAYOUT}.fio").exists() else []) + [
        op.name for op in run.operations if not operations or op.name in operations]
    texts = []
    for name in names:
        job_file = folder / f"{name}.fio"
        if not job_file.exists():
            raise NotFoundError(f"run {run.run_id} has no job file {job_file}")
        texts.append(job_file.read_text().rstrip("\n") + "\nstonewall=1\n")
    files = {value for text in texts for value in _values(text, "filename")}
    if not files or any(Path(path).name != test_file_name(run.run_id) for path in files):
        # A file the user named (a backup file a restore read) is never written nor removed.
        if any(rw not in READ_ONLY_RW for text in texts for rw in _values(text, "rw")):
            raise InputError(f"run {run.run_id}'s job files name a file backupbench did not make and would "
                             "write to it", "export the operations that only read it")
        return _preamble_kept() + "\n".join(texts)
    present = [path for path in files if Path(path).exists()]
    if present:
        raise InputError(f"run {run.run_id}'s test file {present[0]} is still there, and the suite's last job "
                         "would remove it", "run `backupbench cleanup` first, then export again")
    texts[-1] += "unlink=1\n"
    return _preamble(files.pop()) + "\n".join(texts)


# fio's rw= values that issue no write.
READ_ONLY_RW = frozenset({"read", "randread"})


def _values(job_text: str, key: str) -> list[str]:
    """A key's values in a job file, unescaped (paths.for_program: fio reads '\\:' as ':')."""
    return [line.split("=", 1)[1].replace("\\:", ":") for line in job_text.splitlines() if line.startswith(f"{key}=")]


def _preamble_kept() -> str:
    return ("; Run: fio --readonly suite.fio (--readonly makes fio refuse any write). The jobs run one after\n"
            "; another and only read the files they name, which stay as they are: no file is made\n"
            "; (allow_file_create=0) and none removed (no unlink).\n\n")


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
