"""`backupbench run [PATH]`: one workload against one directory, monitored and stored."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

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
from backupbench.agent.startup import DEFAULT_AGENT_PORT
from backupbench.engines.fio_client import parse_hosts
from backupbench.errors import InputError
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


def _check_agent_flags(hosts: str | None, agents: str | None, token_file: Path | None, port: int | None,
                       trust: TrustFlags) -> None:
    if token_file is not None and hosts is None and agents is None:
        raise InputError("--agent-token-file applies to --hosts or --agents", "drop it, or name the hosts")
    if port is not None and (hosts is None or token_file is None):
        raise InputError("--agent-port applies to --hosts with --agent-token-file",
                         "with --agents, give each agent's port in --agents ADDR:PORT,...")
    if trust.given and token_file is None:
        raise InputError(f"{trust.given} applies to --agents or --hosts with --agent-token-file",
                         "drop it, or name the agents and their token file")


def _remote(workload: str, chosen: Workload, path: Path | None, hosts: str | None, agents: str | None,
            token_file: Path | None, port: int | None, trust: TrustFlags) -> tuple[Workload, Path | None]:
    """The workload on --hosts' fio servers or from --agents, and the local PATH left (None then)."""
    _check_agent_flags(hosts, agents, token_file, port, trust)
    if hosts is not None:  # fio's client/server mode: the run is driven from here, PATH is on the hosts
        if agents is not None:
            raise InputError("--agents and --hosts do not go together", "choose one")
        host_list = parse_hosts(hosts)
        remote = on_hosts.on_hosts(workload, chosen, host_list, None if path is None else str(path))
        remote.agents = host_monitor.host_agents(host_list, token_file, port or DEFAULT_AGENT_PORT,
                                                 trust.trust() if token_file else None)
        if not remote.agents:
            remote.notes.append(host_monitor.NO_TIMELINE_NOTE)
        return remote, None
    if agents is not None:  # the s3 workload from agents: the run is driven from here
        return on_agents.on_agents(workload, chosen, agents, token_file, trust.trust()), path
    return chosen, path


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
@click.argument("path", required=False, type=click.Path(path_type=Path))
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
@click.option("--repeat", type=click.IntRange(1, MAX_REPEAT), default=1, show_default=True, metavar="N",
              help="Measure each phase N times in this run (the whole workload, N times in turn); the figure shown "
                   "is the median, with min/max, CV and a 95% interval; comparisons then know the noise.")
@baseline_option
@label_option
@expect_option
@results_option
def run_command(path: Path | None, workload: str, preset: str | None, as_json: bool, hosts: str | None,
                agents: str | None, agent_token_file: Path | None, agent_port: int | None, agent_trust: TrustFlags,
                quiet: bool, repeat: int,
                baseline_ref: str | None, label: str, expectations: list[Expectation], results: Path | None,
                **values: object) -> None:
    """Run a backup workload against PATH, sampling the host; keep and show the figures.

    Without PATH, a scratch directory is made in the current directory and removed afterwards.
    Everything the run writes in PATH is named backupbench-<run> and is always removed.
    """
    definition = WORKLOADS[workload]
    options = _workload_options(definition, preset, values)
    if not definition.needs_directory and path is not None:
        raise InputError(f"--workload {workload} takes no PATH: it writes to --endpoint/--bucket",
                         "drop PATH (to measure a directory, serve it with MinIO in a recipe)")
    monitor = cli_options.build(MonitorOptions, cli_options.split(MonitorOptions, values)[0])
    # Resolve the baseline before measuring, so a typo fails in a second, not after the run.
    baseline = open_store(results)[1].load_run(baseline_ref) if baseline_ref else None
    chosen = definition.build(options, None)
    _check_comparisons(chosen.phases(), workload, baseline, expectations)
    chosen, path = _remote(workload, chosen, path, hosts, agents, agent_token_file, agent_port, agent_trust)
    request = RunRequest(
        workload=chosen, results=results_dir(results), target=path,
        scratch_parent=Path.cwd(), monitor=monitor, host_facts=chosen.engine_versions(),
        on_closed=lambda run: finished_runs.append((open_store(results)[1], run.run_id)), label=label,
        repeat=repeat,
    )
    run = execute if hosts is None else (lambda req, rep: on_hosts.execute(req, chosen, rep))
    if agents is not None:
        run = lambda req, rep: on_agents.execute(req, chosen, rep)  # noqa: E731
    if quiet:
        record, left = measured(lambda: run(request, QuietReporter()))
    else:
        with RichReporter(stderr) as reporter:
            record, left = measured(lambda: run(request, reporter))
    gate = Gate.check(expectations, record)
    if as_json:
        print_document("run", {**document.run_body(record, run_analysis(record, baseline=baseline)), **gate.json()})
    else:
        stdout.print(run_report(record, baseline=baseline))
        gate.print_table()
    finish_measured(gate, left)
