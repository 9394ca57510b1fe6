"""`backupbench run [PATH]...`: one workload against one directory (or, for a restore, the
existing files it reads), monitored and stored."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import click

from backupbench.cli import options as cli_options
from backupbench.cli.common import baseline_option, finished_runs, open_store, results_option, stderr, stdout
from backupbench.cli.common import label_option, print_document, run_analysis
from backupbench.cli.agent_flags import TrustFlags, agent_trust_options
from backupbench.cli.progress import QuietReporter, RichReporter
from backupbench.analysis import gates
from backupbench.analysis.compare import require_common_phase
from backupbench.analysis.gates import Expectation
from backupbench.cli.common import Gate, expect_option, finish_measured, measured
from backupbench.results.model import RunRecord
from backupbench.recipe.hosts import AGENT_PORT as DEFAULT_AGENT_PORT
from backupbench.engines.fio_client import parse_hosts
from backupbench.errors import InputError, RefusedError
from backupbench.monitor.options import MonitorOptions
from backupbench.report.terminal import run_report
from backupbench.results.location import results_dir
from backupbench.runner import agents as on_agents
from backupbench.runner import host_monitor
from backupbench.runner import hosts as on_hosts
from backupbench.results import document
from backupbench.runner.pipeline import RunRequest, execute
from backupbench.workloads.base import MAX_REPEAT, Definition, Workload
from backupbench.workloads.registry import WORKLOADS, names_where

WORKLOAD_HELP = "Workload to run: " + "; ".join(f"{name}: {d.description}" for name, d in WORKLOADS.items())
ON_FIO_SERVERS = "/".join(names_where(lambda capabilities: capabilities.fio_servers))
FROM_AGENTS = " or ".join(f"--workload {name}" for name in names_where(lambda capabilities: capabilities.agents))
# Every workload's options are flags of `run`; a model two workloads share is added once.
OPTION_MODELS = tuple(dict.fromkeys(d.options for d in WORKLOADS.values()))
PRESETS = sorted({name for d in WORKLOADS.values() for name in d.presets})


def _workload_options(definition: Definition, preset: str | None, values: dict) -> object:
    """The chosen workload's options; a flag that belongs to another workload is an error."""
    model = definition.options
    for other in OPTION_MODELS:
        given, _ = cli_options.split(other, values)
        stray = [name for name, value in given.items()
                 if value is not None and value is not False and name not in model.model_fields]
        if stray:
            raise InputError(f"{cli_options.flag_name(stray[0])} does not apply to --workload {definition.name}",
                             "drop it, or choose the workload it belongs to (see backupbench run --help)")
    if preset and preset not in definition.presets:
        owners = [name for name, d in WORKLOADS.items() if preset in d.presets]
        raise InputError(f"--preset {preset} applies to --workload {', '.join(owners)}, not {definition.name}")
    mine, _ = cli_options.split(model, values)
    given = {k: v for k, v in mine.items() if v is not None and v is not False}
    return cli_options.build(model, definition.options_from(given, preset))


@dataclass(frozen=True)
class RemoteFlags:
    """Where the workload runs when not here: --hosts' fio servers or --agents, and how their
    agents are reached (--agent-token-file, --agent-port, the trust flags)."""

    hosts: str | None = None
    agents: str | None = None
    token_file: Path | None = None
    port: int | None = None
    trust: TrustFlags = TrustFlags()

    def check(self) -> None:
        if self.token_file is not None and self.hosts is None and self.agents is None:
            raise InputError("--agent-token-file applies to --hosts or --agents", "drop it, or name the hosts")
        if self.port is not None and (self.hosts is None or self.token_file is None):
            raise InputError("--agent-port applies to --hosts with --agent-token-file",
                             "with --agents, give each agent's port in --agents ADDR:PORT,...")
        if self.trust.given and self.token_file is None:
            raise InputError(f"{self.trust.given} applies to --agents or --hosts with --agent-token-file",
                             "drop it, or name the agents and their token file")
        if self.hosts is not None and self.agents is not None:
            raise InputError("--agents and --hosts do not go together", "choose one")


@dataclass(frozen=True)
class Presentation:
    """How the run is shown and judged: --json, --quiet, --label, --baseline, --expect."""

    as_json: bool = False
    quiet: bool = False
    label: str = ""
    baseline_ref: str | None = None
    expectations: tuple[Expectation, ...] = ()


def _grouped(command: Callable[..., Any]) -> Callable[..., Any]:
    """The remote flags handed to `command` as one `remote: RemoteFlags`, the output flags as
    one `shown: Presentation` (click gives each flag as a keyword of its own)."""
    @functools.wraps(command)
    def with_groups(*args: Any, **kwargs: Any) -> Any:
        remote = RemoteFlags(*(kwargs.pop(name) for name in ("hosts", "agents", "agent_token_file", "agent_port",
                                                             "agent_trust")))
        shown = Presentation(*(kwargs.pop(name) for name in ("as_json", "quiet", "label", "baseline_ref")),
                             tuple(kwargs.pop("expectations")))
        return command(*args, remote=remote, shown=shown, **kwargs)
    return with_groups


def _remote(workload: str, chosen: Workload, path: Path | None, remote: RemoteFlags) -> tuple[Workload, Path | None]:
    """The workload on --hosts' fio servers or from --agents, and the local PATH left (None then)."""
    remote.check()
    if remote.hosts is not None:  # fio's client/server mode: the run is driven from here, PATH is on the hosts
        host_list = parse_hosts(remote.hosts)
        on_servers = on_hosts.on_hosts(workload, chosen, host_list, None if path is None else str(path))
        on_servers.agents = host_monitor.host_agents(host_list, remote.token_file, remote.port or DEFAULT_AGENT_PORT,
                                                     remote.trust.trust() if remote.token_file else None)
        if not on_servers.agents:
            on_servers.notes.append(host_monitor.NO_TIMELINE_NOTE)
        return on_servers, None
    if remote.agents is not None:  # the s3 workload from agents: the run is driven from here
        return on_agents.on_agents(workload, chosen, remote.agents, remote.token_file, remote.trust.trust()), path
    return chosen, path


def _paths(definition: Definition, paths: tuple[Path, ...], values: dict) -> tuple[Path | None, dict]:
    """The one directory PATH of a workload that works in one, or (a restore) every PATH as the
    files it reads, beside those of --files."""
    if definition.reads_files:
        named = [part for part in str(values.get("files") or "").split(",") if part.strip()]
        files = tuple(str(p.expanduser().absolute()) for p in paths) + tuple(named)
        return None, {**values, "files": files or None}
    if len(paths) > 1:
        raise InputError(f"--workload {definition.name} takes one PATH (a directory), not {len(paths)}",
                         "name one directory; several backup files are read by --workload restore FILE...")
    path = paths[0] if paths else None
    if path is not None and _is_file(path):
        raise RefusedError(f"{path} is a file, not a directory: --workload {definition.name} writes a test file of its "
                           "own in a directory", f"to measure restores of this file, read only: backupbench run "
                           f"--workload restore {path}")
    return path, values


def _samples(definition: Definition, repeat: int | None, values: dict) -> tuple[int, dict]:
    """--repeat as given; else the workload's default samples (kb2014: 3 x 3 s) when the user set
    no runtime of their own (nor a steady state, which ends each operation itself), else 1."""
    if repeat is not None:
        return repeat, values
    default = definition.sampled_by_default
    if default is None or values.get("runtime") is not None or values.get("steady_state") is not None:
        return 1, values
    samples, options = default
    return samples, {**values, **options}


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long, say: the directory checks say what is wrong with it
        return False


def _check_comparisons(phases: tuple[str, ...], workload: str, baseline: RunRecord | None,
                       expectations: list[Expectation]) -> None:
    """A baseline or an --expect that cannot apply to the phases about to be measured (or names
    no figure, or a value of the wrong kind for it) fails now, in a second, not after the run."""
    if baseline is not None:
        require_common_phase(phases, f"--workload {workload}", baseline)
    gates.check_before_run(expectations, phases, f"--workload {workload}")


def _with_workload_options(command: Callable) -> Callable:
    # Keys several workloads share (--data, --compress, ...) are one flag.
    added: set[str] = set()
    for model in reversed(OPTION_MODELS):
        command = cli_options.click_options(model, skip=frozenset(added))(command)
        added |= set(model.model_fields)
    return command


@click.command("run")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path), metavar="[PATH]...")
@click.option("--workload", type=click.Choice(list(WORKLOADS)), default="kb2014", show_default=True,
              help=WORKLOAD_HELP)
@click.option("--preset", type=click.Choice(PRESETS), default=None,
              help="Start from this preset (smallfiles: field-note-e, 104,857 x 100 KiB written with the note's byte "
                   "patterns; quick, 2,000 files); "
                   "flags override it.")
@_with_workload_options
@cli_options.click_options(MonitorOptions)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
@click.option("--hosts", default=None, metavar="H1,H2[:PORT]",
              help=f"Run {ON_FIO_SERVERS} on these hosts' fio servers (fio --server, port 8765 by default; "
                   "see backupbench hosts), all at once; PATH is then the directory on every host.")
@click.option("--agents", default=None, metavar="ADDR:PORT,...",
              help=f"Run {FROM_AGENTS} from these backupbench agents at once (objects and streams split "
                   "over them), one merged result; see backupbench agent.")
@click.option("--agent-token-file", type=click.Path(path_type=Path), default=None,
              help="File holding the token the agents were started with: needed with --agents; with --hosts, "
                   "each host's `backupbench agent` then gives its 1 s samples (a per-host timeline).")
@click.option("--agent-port", type=click.IntRange(1, 65535), default=None, metavar="PORT",
              help=f"With --hosts: the port of each host's agent [default: {DEFAULT_AGENT_PORT}].")
@agent_trust_options
@click.option("--quiet", is_flag=True, help="No progress bars.")
@click.option("--repeat", type=click.IntRange(1, MAX_REPEAT), default=None, metavar="N",
              help="Measure each phase N times in this run (the whole workload, N times in turn); the figure shown "
                   "is the median, with min/max, CV and a 95% interval; comparisons then know the noise "
                   "[default: 1; kb2014 without --runtime: 3 samples of 3 s each].")
@baseline_option
@label_option
@expect_option
@results_option
@_grouped
def run_command(paths: tuple[Path, ...], workload: str, preset: str | None, repeat: int | None, results: Path | None, *,
                remote: RemoteFlags, shown: Presentation, **values: object) -> None:
    """Run a backup workload against PATH, sampling the host; keep and show the figures.

    Without PATH, a scratch directory is made in the current directory and removed afterwards.
    Everything the run writes in PATH is named backupbench-<run> and is always removed.
    --workload restore takes existing backup files as its PATHs and only reads them.
    """
    definition = WORKLOADS[workload]
    path, values = _paths(definition, paths, values)
    repeat, values = _samples(definition, repeat, values)
    options = _workload_options(definition, preset, values)
    if not definition.needs_directory and not definition.reads_files and path is not None:
        raise InputError(f"--workload {workload} takes no PATH: it writes to --endpoint/--bucket",
                         "drop PATH (to measure a directory, serve it with MinIO in a recipe)")
    monitor = cli_options.build(MonitorOptions, cli_options.split(MonitorOptions, values)[0])
    # Resolve the baseline before measuring, so a typo fails in a second, not after the run.
    baseline = open_store(results)[1].load_run(shown.baseline_ref) if shown.baseline_ref else None
    chosen = definition.build(options, None)
    _check_comparisons(chosen.phases(), workload, baseline, list(shown.expectations))
    chosen, path = _remote(workload, chosen, path, remote)
    request = RunRequest(
        workload=chosen, results=results_dir(results), target=path,
        scratch_parent=Path.cwd(), monitor=monitor, host_facts=chosen.engine_versions(),
        on_closed=lambda run: finished_runs.append((open_store(results)[1], run.run_id)), label=shown.label,
        repeat=repeat, reads=tuple(Path(name) for name in options.files) if definition.reads_files else (),
    )
    run = execute if remote.hosts is None else (lambda req, rep: on_hosts.execute(req, chosen, rep))
    if remote.agents is not None:
        run = lambda req, rep: on_agents.execute(req, chosen, rep)  # noqa: E731
    if shown.quiet:
        record, left = measured(lambda: run(request, QuietReporter()))
    else:
        with RichReporter(stderr) as reporter:
            record, left = measured(lambda: run(request, reporter))
    gate = Gate.check(list(shown.expectations), record)
    if shown.as_json:
        analysis = run_analysis(record, baseline=baseline, results=results_dir(results))
        print_document("run", {**document.run_body(record, analysis), **gate.json()})
    else:
        stdout.print(run_report(record, baseline=baseline))
        gate.print_table()
    finish_measured(gate, left)
