"""A fio workload (kb2014, first-write) run on several hosts at once through fio's client/server
mode (engines/fio_client.py): `backupbench run --hosts H1,H2 PATH`.

Each phase is one `fio --client` run on every host still answering. The operation's figures
are the hosts' total (bandwidth and IOPS summed; p99 latency read from every host's latency
histogram merged, fio's json+ `bins`, never an average); each host's own figures are in the
phase's HostAccount (results/phase.py), the total's p50/p95/p99/p99.9 in
detail["total_percentiles_ns"]. A host lost during a phase is named in the HostAccount and in
the run's notes, and left out of the later phases: the run goes on with the others. Each host's test file is journalled before the
first phase and removed at the end by a cleanup job sent to that host.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from backupbench import units
from backupbench.agent.client import AgentClient
from backupbench.engines.fio import FioEngine
from backupbench.engines.fio_client import (ClientResult, Host, ServerInfo, check_servers, remote_file,
                                            remote_path, remote_test_file, remove_on_host, run_clients)
from backupbench.errors import EngineError, InputError
from backupbench.results.model import RunRecord
from backupbench.results.phase import HOSTS, LOST_HOSTS
from backupbench.runner import host_monitor
from backupbench.runner.phases import Reporter
from backupbench.runner.pipeline import RunRequest, execute_remote
from backupbench.workloads.base import PhaseHooks, Workload
from backupbench.workloads.fio_workload import FioPhase, FioWorkload
from backupbench.workloads.registry import WORKLOADS, names_where
# Beyond a time-based phase's runtime: connecting, laying out, fio's own 5 s lost-host timeout.
PHASE_GRACE_S = 120.0
# A phase without a runtime (laying out the file) at a pessimistic 10 MiB/s per host.
SLOWEST_BPS = 10 * units.MiB
P99_MERGED = "p99 latency of the total is read from the hosts' latency histograms merged (fio json+ bins)"
# Only when fio gave no histograms (an output without json+ bins): an upper bound, not the p99.
P99_WORST = "p99 latency of the total is the worst host's: fio gave no latency histograms to merge"


def phase_timeout(phase: FioPhase) -> float:
    job = phase.job
    if job.longest_s is not None:
        return job.longest_s + PHASE_GRACE_S
    return PHASE_GRACE_S + job.region_size * job.numjobs / SLOWEST_BPS


@dataclass
class HostsWorkload:
    """The Workload (workloads/base.py) of a fio workload run on every host of `hosts`."""

    inner: FioWorkload
    hosts: tuple[Host, ...]
    path: PurePosixPath
    binary: str = "fio"
    # Lost hosts, cleanup failures: the run's notes (added by `execute` below).
    notes: list[str] = field(default_factory=list)
    lost: dict[str, str] = field(default_factory=dict)
    servers: dict[str, ServerInfo] = field(default_factory=dict)
    # Each host's agent by host name, asked for its 1 s samples (a per-host timeline); empty: none.
    agents: dict[str, AgentClient] = field(default_factory=dict)
    needs_directory: bool = field(default=False, init=False)  # PATH is on the hosts, not here
    test_file_cautions: bool = field(default=False, init=False)
    _journal_ids: dict[Host, int | None] = field(default_factory=dict, init=False, repr=False)
    _stopped_mid_phase: bool = field(default=False, init=False, repr=False)

    @property
    def kind(self) -> str:
        return self.inner.kind

    @property
    def buffered(self) -> bool:
        return self.inner.buffered

    @property
    def space_fix(self) -> str:
        return self.inner.space_fix

    def target_label(self, target: Path | None) -> str:
        return f"{','.join(h.name for h in self.hosts)}:{self.path}"

    def engine_versions(self) -> dict[str, str]:
        """The local fio and every server's, and every host's agent's; refuses (RefusedError)
        naming each host down."""
        local = FioEngine(self.binary).version()
        self.servers = check_servers(self.hosts, local, self.binary)
        agents = host_monitor.check_agents(self.agents)
        return {"fio": local, **{f"fio@{name}": info.fio_version for name, info in self.servers.items()},
                **{f"backupbench@{name}": version for name, version in agents.items()}}

    def phases(self) -> tuple[str, ...]:
        return self.inner.phases()

    def settings(self) -> dict[str, Any]:
        return {**self.inner.settings(), "hosts": [h.name for h in self.hosts], "host_path": str(self.path)}

    def space_needed(self) -> int:
        return self.inner.space_needed()

    def check(self, target: Path | None) -> None:
        if not self.servers:
            self.engine_versions()

    def execute(self, target: Path | None, folder: Path, run_id: str, hooks: PhaseHooks) -> None:
        with host_monitor.sampling(self.agents, folder, hooks, self.notes) as sampled:
            self._execute(folder, run_id, sampled)

    def _execute(self, folder: Path, run_id: str, hooks: PhaseHooks) -> None:
        files = {host: remote_test_file(self.path, run_id, host) for host in self.hosts}
        for host, path in files.items():
            self._journal_ids[host] = hooks.will_create(remote_file(host, path, run_id))
        per_host = {host: self.inner.phases_for(Path(str(path))) for host, path in files.items()}
        commands: list[str] = []
        try:
            for index, phase in enumerate(per_host[self.hosts[0]]):
                active = [h for h in self.hosts if h.name not in self.lost]
                jobs = [(h, per_host[h][index]) for h in active]
                self._stopped_mid_phase = True
                result = self._run_phase(phase, jobs, folder, hooks, commands)
                self._stopped_mid_phase = False
                self._record(phase, result, hooks)
        finally:
            (folder / "commands.txt").write_text("\n".join(commands) + "\n")

    def _run_phase(self, phase: FioPhase, jobs: list[tuple[Host, FioPhase]], folder: Path, hooks: PhaseHooks,
                   commands: list[str]) -> ClientResult:
        name = phase.job.name
        hooks.started(name, f"{phase.title} (on {len(jobs)} hosts)", phase.job.pattern,
                      measured=phase.score is not None, warmup_s=phase.job.ramp_s)
        # fio's client writes each host's latency logs here as <log name>_lat.<n>.log.<address>:
        # the host's tag in the log name keeps two servers on one address apart.
        job_files = [(h, p.job.logged(f"{name}.{h.file_tag}").write(folder / f"{name}.{h.file_tag}.fio"))
                     for h, p in jobs]
        try:
            run = run_clients(job_files, folder / f"{name}.json", phase_timeout(phase), self.binary,
                              lambda f: hooks.progress(name, f, ""), phase.job.longest_s)
        except EngineError as exc:
            raise EngineError(f"{name}: {exc.message}", exc.fix) from exc
        commands.append(" ".join(run.argv))
        return run.result

    def _record(self, phase: FioPhase, result: ClientResult, hooks: PhaseHooks) -> None:
        name = phase.job.name
        for host, why in result.lost.items():
            if host not in self.lost:
                self.lost[host] = why
                self.notes.append(f"host {host} lost during {name}: {why}; the run went on without it")
        self.notes += [f"{name}: {note}" for note in result.notes if f"{name}: {note}" not in self.notes]
        score = phase.score or (lambda summary: {})
        figures = {**score(result.total), "hosts_reporting": float(len(result.per_host))}
        detail = {"job_file": f"{name}.<host>.fio", "raw": f"{name}.json", "buffered": not phase.job.direct,
                  HOSTS: {host: score(summary) for host, summary in result.per_host.items()},
                  LOST_HOSTS: dict(result.lost), "p99_total": P99_MERGED if result.total_p99_merged else P99_WORST,
                  "total_percentiles_ns": result.total_percentiles(), "units": {"hosts_reporting": "hosts"}}
        hooks.finished(name, figures, detail)

    def cleanup(self, target: Path | None, run_id: str, hooks: PhaseHooks) -> None:
        """A cleanup job on every host still answering; a lost one's file is left to the run's
        sweep, which tries it once more (its server may be back, e.g. restarted by systemd) and
        reports it left behind if not. After a phase was cut short, twice: a server still
        stopping its job could otherwise create the file again after the first."""
        left: set[Host] = set()
        for attempt in range(2 if self._stopped_mid_phase else 1):
            if attempt:
                time.sleep(1.0)
            left = {host for host in self._journal_ids if host.name in self.lost}
            for host in set(self._journal_ids) - left:
                try:
                    remove_on_host(host, remote_test_file(self.path, run_id, host), self.binary)
                except EngineError:
                    left.add(host)
        # What is left stays in the journal: the run's sweep tries once more and reports it left
        # behind, and `backupbench cleanup` tries again once the host is back.
        for host, artefact_id in self._journal_ids.items():
            if host not in left:
                hooks.removed(artefact_id)


def on_hosts(workload_name: str, built: Workload, hosts: tuple[Host, ...], path: str | None) -> HostsWorkload:
    """`built` (a workload that runs on fio servers: kb2014, first-write) on `hosts`; InputError
    for any other."""
    definition = WORKLOADS.get(workload_name)
    if definition is None or not definition.capabilities.fio_servers or not isinstance(built, FioWorkload):
        on_servers = names_where(lambda capabilities: capabilities.fio_servers)
        raise InputError(f"--hosts applies to --workload {' or '.join(on_servers)}, not {workload_name}",
                         "drop --hosts, or choose a fio workload")
    if path is None:
        raise InputError("--hosts needs PATH: the directory to test on every host (absolute, as the hosts see it)")
    return HostsWorkload(built, hosts, remote_path(path))


def execute(request: RunRequest, workload: HostsWorkload, reporter: Reporter) -> RunRecord:
    return execute_remote(request, workload, reporter)
