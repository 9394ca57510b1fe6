"""`backupbench apply` of a recipe with [hosts]: each workload on other machines, one after
another, as `run --hosts` (kb2014, first-write on fio servers) and `run --agents` (s3 from
backupbench agents) run it.

Every fio server and every agent is checked before the first workload starts: one that does
not answer refuses the recipe by name, and nothing is run or stored. With agent_token_file, the
fio hosts' own agents are among them, and their 1 s samples are fetched while kb2014 and
first-write run (runner/host_monitor.py: the per-host timeline), as `run --hosts H
--agent-token-file F` does; without it, the run's notes say how to get one. The recipe is then one
stored run, as `apply` stores a recipe with layouts: the recipe in its settings, each
workload's phases as its operations (named '<n>-<kind>/<phase>' when there are several), each
with its per-host figures, so `show`, `history` and `report` read it like any other recipe run.
This machine's monitor is off, as in `run --hosts`: it carries none of the hosts' I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from backupbench.agent.tls import RECIPE_NAMES, Trust
from backupbench.devices import facts
from backupbench.errors import BackupbenchError, InputError, RefusedError
from backupbench.plan import Plan
from backupbench.recipe import naming
from backupbench.recipe.hosts import HostsSpec
from backupbench.recipe.model import Recipe
from backupbench.results.model import RunRecord
from backupbench.results.location import store_file
from backupbench.results.store import Store
from backupbench.runner import host_monitor
from backupbench.runner.agents import on_agents
from backupbench.runner.hosts import HostsWorkload, on_hosts
from backupbench.runner.phases import Reporter
from backupbench.runner.pipeline import RemoteWorkload, RunSession, journalled, open_journal
from backupbench.runner.placement import NewRun, Placement, Sampling, Where
from backupbench.workloads.base import Workload
from backupbench.workloads.registry import WORKLOADS


@dataclass(frozen=True)
class RemoteJob:
    """One workload of the recipe, built for the machines it runs on."""

    group: str
    workload: RemoteWorkload
    machines: str     # how a message names them: "fio servers 10.0.0.5, 10.0.0.6"
    repeat: int = 1   # the entry's `repeat`


def agent_trust(hosts: HostsSpec) -> Trust:
    """How the recipe's agents are trusted: agent_ca, agent_fingerprints, agent_insecure_plain_http
    or the system's CAs, as the --agent-* flags say it (InputError naming the key)."""
    return Trust.choose(hosts.agent_ca, hosts.agent_fingerprints, hosts.agent_insecure_plain_http, RECIPE_NAMES)


def _on_fio_servers(kind: str, built: Workload, hosts: HostsSpec, token_file: Path | None) -> HostsWorkload:
    """As `run --hosts NAMES PATH [--agent-token-file F --agent-port P]` builds it: with a token,
    each host's agent is checked and sampled; without, the notes say how to get a timeline."""
    workload = on_hosts(kind, built, hosts.hosts(), hosts.path)
    trust = agent_trust(hosts) if token_file else None
    workload.agents = host_monitor.host_agents(workload.hosts, token_file, hosts.host_agent_port(), trust)
    if not workload.agents:
        workload.notes.append(host_monitor.NO_TIMELINE_NOTE_RECIPE)
    return workload


def _job(recipe: Recipe, hosts: HostsSpec, index: int) -> RemoteJob:
    """The recipe's workload `index` as `run --hosts` / `run --agents` builds it; their typed
    errors (InputError) for what those refuse."""
    entry = recipe.workload[index]
    definition = WORKLOADS[entry.kind]
    built = definition.build(entry, None)
    token_file = Path(hosts.agent_token_file) if hosts.agent_token_file else None
    group = naming.workload_group("", index, entry.kind, len(recipe.workload))
    if definition.capabilities.fio_servers:
        on_servers = _on_fio_servers(entry.kind, built, hosts, token_file)
        machines = "fio servers " + ", ".join(host.name for host in on_servers.hosts)
        if on_servers.agents:
            machines += " and their agents"
        return RemoteJob(group, on_servers, machines, entry.repeat)
    remote = on_agents(entry.kind, built, ",".join(hosts.agents), token_file, agent_trust(hosts))
    return RemoteJob(group, remote, "agents " + ", ".join(hosts.agents), entry.repeat)


def refusals(recipe: Recipe) -> list[str]:
    """Why the recipe's workloads cannot run on its hosts as asked, without asking the hosts:
    what the recipe's validation cannot check (an agent's address, what agents cannot do, the
    token file). Worded as plan.remote_steps words a workload that cannot be built."""
    if recipe.hosts is None:
        return []
    found = []
    for index, entry in enumerate(recipe.workload):
        try:
            _job(recipe, recipe.hosts, index)
        except BackupbenchError as exc:
            found.append(f"workload[{index}] ({entry.kind}): {exc.one_line()}")
    return found


def apply_on_hosts(plan: Plan, results: Path, reporter: Reporter, *, announce: Callable[[str], None] = lambda _m: None,
                   on_closed: Callable[[RunRecord], None] | None = None, host_facts: dict | None = None,
                   label: str = "") -> RunRecord:
    recipe, hosts = plan.recipe, plan.recipe.hosts
    if hosts is None:
        raise InputError(f"recipe {recipe.name!r} has no [hosts]", "apply it with runner.apply.apply")
    if plan.refusals:
        raise RefusedError("the recipe cannot run as asked: " + "; ".join(plan.refusals),
                           "see `backupbench plan RECIPE`")
    jobs = [_job(recipe, hosts, index) for index in range(len(recipe.workload))]
    Store(store_file(results))  # a --results that is no directory fails first, in one line
    with journalled(open_journal(results, plan.run_id)) as journal:
        for job in jobs:
            announce(f"checking {job.machines}")
            job.workload.check(None)  # RefusedError naming the first one that does not answer
        # After the checks: an agent's version is known only once it has answered. (A fio
        # server is asked once more for its version: a null job, a fraction of a second.)
        versions = {name: version for job in jobs for name, version in job.workload.engine_versions().items()}
        host = {**facts.collect_host(), **(host_facts or {}), **versions}
        monitor = recipe.monitor.model_copy(update={"no_monitor": True})
        new = NewRun(plan.run_id, "recipe", recipe.name, {"recipe": recipe.model_dump(mode="json")}, host, label)
        session = RunSession(new, results=results, reporter=reporter, monitor=monitor, journal=journal,
                             on_closed=on_closed)
        with session:
            for job in jobs:
                try:
                    session.measure(job.workload, Where(checked=True), Placement(job.group), Sampling(job.repeat))
                finally:
                    session.run.notes += [note for note in job.workload.notes if note not in session.run.notes]
        return session.run
