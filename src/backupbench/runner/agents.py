"""The S3 workload from N client hosts at once, through `backupbench agent`s:
`backupbench run --workload s3 --endpoint URL --bucket B --agents A1:PORT,A2:PORT --agent-token-file F`.

Why per-phase jobs: an agent's s3-run runs its phases back to back, so agents finishing their
PUTs at different moments would start their GETs at different moments, overlapping one agent's
GET with another's PUT. So each phase is one job per agent, started on all at the same moment
(`start_in` leaves each time for its pre-flight checks); the objects are kept between the jobs
(keep/resume) and deleted by the last one.

Prefixes: one per agent, `backupbench/<run-id>/<label>/`, so counts and keys never collide, all
below the run's own `backupbench/<run-id>/`. That one prefix is found unused and journalled
before any agent writes: if this process is killed, `backupbench cleanup` removes every agent's
objects (and nothing else) with one delete, with this host's credentials, as the end of a run
does, lost agents' objects too.

Figures (agents_merge.py): one operation per phase, merged from every agent that finished it.
Each agent's own figures go to the phase's HostAccount (results/phase.py); an agent lost mid-run too
and the run's notes, and the others go on. The options describe the whole run: objects and
streams are split evenly over the agents, so a run from N agents does what the same run from
this host does.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backupbench import __version__, stopping
from backupbench.agent.client import AgentClient, AgentUnreachable
from backupbench.agent.startup import parse_listen
from backupbench.agent.tls import Trust
from backupbench.errors import BackupbenchError, EngineError, InputError, RefusedError
from backupbench.results.model import RunRecord
from backupbench.results.phase import HOSTS, LOST_HOSTS
from backupbench.runner import agents_latency, host_monitor
from backupbench.runner.agents_merge import (MERGE_NOTE, errors_by_kind, every_request_failed, live_total, merge_phase,
                                             split)
from backupbench.runner.phases import Reporter
from backupbench.runner.pipeline import RunRequest, execute_remote
from backupbench.workloads.base import PhaseHooks
from backupbench.workloads.registry import WORKLOADS, names_where
from backupbench.workloads.s3 import S3Workload, objects_artefact
from backupbench.workloads.s3_options import PHASE_TITLES, run_prefix
from backupbench.workloads.s3_phase import content_seed

AGENT_PHASES = ("put", "get", "mixed", "delete")
# Time every agent has to check the endpoint before the common start.
START_LEAD_S = 2.0
POLL_S = 0.5
# An agent that does not answer this many polls in a row is lost (each poll is bounded by
# the client's timeout, so losing one takes seconds, not minutes).
LOST_AFTER = 4
# Beyond a phase's transfer at a pessimistic rate: starting, checking, the last requests.
PHASE_GRACE_S = 120.0
SLOWEST_BPS = 2 * 1024 * 1024
STOP_WAIT_S = 60.0
# How long an agent keeps a phase's objects for the next phase's job: the controller sends it
# within a second; if it never does (the controller was killed) the agent deletes them.
KEEP_S = 60.0


@dataclass(frozen=True)
class AgentRef:
    address: str
    label: str


def parse_agents(text: str) -> tuple[AgentRef, ...]:
    """ADDR:PORT,ADDR:PORT -> the agents, each labelled by its address (a valid key part)."""
    if "@" in text:  # quoted nowhere: what precedes the '@' may be a password, commas and all
        raise InputError("--agents must not carry credentials (USER@ or USER:PASSWORD@): an agent takes its "
                         "token from --agent-token-file", "e.g. --agents 10.0.0.5:7480,10.0.0.6:7480")
    found: list[AgentRef] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        host, port = parse_listen(item)
        # A key part must start with a letter or digit: '::1' is written as the same '0::1'.
        label = f"{'0' if host.startswith(':') else ''}{host.replace(':', '_')}-{port}"
        if any(ref.label == label for ref in found):
            raise InputError(f"--agents names {item} twice")
        found.append(AgentRef(item, label))
    if not found:
        raise InputError("--agents is empty", "e.g. --agents 10.0.0.5:7480,10.0.0.6:7480")
    return tuple(found)


def agent_prefix(run_id: str, label: str) -> str:
    """The agent's own prefix, below the run's (which the journal holds)."""
    return f"{run_prefix(run_id)}{label}/"


def refuse_unsupported(workload: S3Workload) -> None:
    """One line for an option an agent's s3-run cannot do (protocol.S3Run has no key for it)."""
    opts = workload.options
    stray = [phase for phase in opts.s3_phases if phase not in AGENT_PHASES]
    checks = [(bool(stray), f"--s3-phases {','.join(stray)}"), (opts.duration is not None, "--duration"),
              (opts.object_lock is not None, "--object-lock"), (not opts.object_size.fixed, "a --object-size range"),
              (opts.insecure_tls or opts.ca_file is not None, "--insecure-tls/--ca-file"),
              (opts.create_bucket, "--create-bucket")]
    for bad, name in checks:
        if bad:
            raise InputError(f"{name} does not apply to a run with --agents", "drop it (agents run put, get, "
                             "mixed, delete of a fixed object count and size on an existing bucket over http)")
    if (opts.object_count or 0) < 1:
        raise InputError("--agents needs an object count (--objects)")


# ---- the workload ------------------------------------------------------------------------------

@dataclass
class AgentsWorkload:
    """The Workload (workloads/base.py) of the s3 workload run from every agent of `agents`."""

    inner: S3Workload
    agents: tuple[AgentRef, ...]
    token: str
    trust: Trust = field(default_factory=Trust)
    notes: list[str] = field(default_factory=list)
    lost: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    kind: str = field(default="s3", init=False)
    needs_directory: bool = field(default=False, init=False)
    buffered: bool = field(default=False, init=False)
    test_file_cautions: bool = field(default=False, init=False)
    space_fix: str = field(default="", init=False)
    _objects_id: int | None = field(default=None, init=False, repr=False)
    _run_id: str = field(default="", init=False, repr=False)
    _folder: Path | None = field(default=None, init=False, repr=False)

    def client(self, ref: AgentRef) -> AgentClient:
        return AgentClient(ref.address, self.token, trust=self.trust)

    def target_label(self, target: Path | None) -> str:
        return f"{self.inner.target_label(None)} from {len(self.agents)} agents"

    def engine_versions(self) -> dict[str, str]:
        return {**self.inner.engine_versions(), **{f"backupbench@{k}": v for k, v in self.versions.items()}}

    def phases(self) -> tuple[str, ...]:
        return self.inner.phases()

    def shares(self) -> dict[str, tuple[int, int]]:
        """label -> (objects, streams) of that agent."""
        opts = self.inner.options
        n = len(self.agents)
        objects, streams = split(opts.object_count or 0, n), split(opts.concurrency, n)
        return {ref.label: (objects[i], max(1, streams[i])) for i, ref in enumerate(self.agents)}

    def settings(self) -> dict[str, Any]:
        return {**self.inner.settings(), "agents": [r.address for r in self.agents],
                "per_agent": {k: {"objects": o, "concurrency": c} for k, (o, c) in self.shares().items()},
                "key_prefix": "backupbench/<run_id>/<agent>/"}

    def space_needed(self) -> int:
        return self.inner.space_needed()

    def check(self, target: Path | None = None) -> None:
        """Every agent reachable, taking the token, on our version; then the endpoint from here.
        RefusedError naming the first agent that is not."""
        for ref in self.agents:
            try:
                hello = self.client(ref).hello()
            except BackupbenchError as exc:   # the client's errors name the agent already
                raise RefusedError(exc.message, exc.fix or "") from exc
            version = str(hello.get("version", "?"))
            if version != __version__:
                raise RefusedError(f"agent {ref.address} runs backupbench {version}, this is {__version__}",
                                   "install the same version on every agent host")
            self.versions[ref.label] = version
        self.inner.check(None)

    # ---- the run ------------------------------------------------------------------------------
    def execute(self, target: Path | None, folder: Path, run_id: str, hooks: PhaseHooks) -> None:
        clients = {ref.label: self.client(ref) for ref in self.agents}
        self._folder = folder
        with host_monitor.sampling(clients, folder, hooks, self.notes) as sampled:
            self._execute(run_id, sampled)

    def _execute(self, run_id: str, hooks: PhaseHooks) -> None:
        self._run_id = run_id
        self._claim(run_id, hooks)
        ops = self.phases()
        for index, op in enumerate(ops):
            active = [ref for ref in self.agents if ref.label not in self.lost]
            if not active:
                raise EngineError(f"every agent was lost before {op}: " + "; ".join(self.lost.values()))
            hooks.started(op, PHASE_TITLES[op], f"{self.inner.options.describe(op)} from {len(active)} agents")
            jobs = self._start(op, index == 0, index == len(ops) - 1, active)
            finished = self._follow(op, jobs, hooks)
            if not finished:
                raise EngineError(f"no agent finished {op}: " + "; ".join(self.lost.values()))
            self._record(op, finished, hooks)

    def _claim(self, run_id: str, hooks: PhaseHooks) -> None:
        """Refuse a run prefix already in use; then journal it whole, before any agent writes:
        it holds every agent's prefix, so one removal with this host's credentials takes them
        all, also in `backupbench cleanup` after this process was killed."""
        s3, creds = self.inner.connect()
        prefix = run_prefix(run_id)
        if self.inner.engine.probe(s3, creds, prefix).prefix_empty is False:
            raise RefusedError(f"bucket {s3.bucket} already holds objects under {prefix}; they are not this "
                               "run's and will not be touched", "use another run id")
        self._objects_id = hooks.will_create(objects_artefact(s3, prefix, self.inner.options.profile, creds.source))

    def _request(self, ref: AgentRef, op: str, first: bool, last: bool) -> dict[str, Any]:
        opts, (s3, creds) = self.inner.options, self.inner.connect()
        objects, streams = self.shares()[ref.label]
        # Fresh bytes for every agent and every run: the agent's own seed (workloads/s3_phase.py).
        plan = opts.object_plan(content_seed(self._run_id, ref.label))
        return {"endpoint": s3.endpoint, "bucket": s3.bucket, "region": s3.region,
                "prefix": agent_prefix(self._run_id, ref.label), "ops": [op], "objects": objects,
                "concurrency": streams, **plan.agent_fields(),
                "request_timeout": float(opts.request_timeout), "connect_timeout": float(opts.connect_timeout),
                "access_key": creds.access_key.get_secret_value(), "secret_key": creds.secret_key.get_secret_value(),
                "session_token": creds.session_token.get_secret_value() if creds.session_token else None,
                "keep": not last, "keep_s": KEEP_S, "resume": not first}

    def _start(self, op: str, first: bool, last: bool, active: list[AgentRef]) -> dict[str, str]:
        """The phase's job on every active agent, sent at once; label -> job id. An agent that
        cannot take it is lost."""
        start_at = time.monotonic() + START_LEAD_S

        def send(ref: AgentRef) -> tuple[AgentRef, str | BackupbenchError]:
            try:
                fields = {**self._request(ref, op, first, last), "start_in": max(0.0, start_at - time.monotonic())}
                return ref, str(self.client(ref).s3_run(**fields)["job_id"])
            except BackupbenchError as exc:
                return ref, exc
        with ThreadPoolExecutor(max_workers=len(active)) as pool:
            sent = list(pool.map(send, active))
        jobs: dict[str, str] = {}
        for ref, outcome in sent:
            if isinstance(outcome, BackupbenchError):
                self._lose(ref, op, outcome.one_line())
            else:
                jobs[ref.label] = outcome
        return jobs

    def _lose(self, ref: AgentRef, op: str, why: str) -> None:
        if ref.label not in self.lost:
            self.lost[ref.label] = why
            self.notes.append(f"agent {ref.address} lost during {op}: {why}; the run went on without it")

    def _follow(self, op: str, jobs: dict[str, str], hooks: PhaseHooks) -> dict[str, dict[str, Any]]:
        """Poll every job until each is done or its agent lost; the finished phases by label.
        On a stop (Ctrl-C) every job is asked to stop, and waited for, before it goes on up."""
        refs = {ref.label: ref for ref in self.agents}
        pending, finished = dict(jobs), {}
        misses = {label: 0 for label in jobs}
        fractions = {label: 0.0 for label in jobs}
        details: dict[str, str] = {}  # each agent's live figures, from its loader
        deadline = time.monotonic() + self._phase_timeout()
        try:
            while pending:
                stopping.check()
                for label, job_id in list(pending.items()):
                    job = self._poll(refs[label], job_id, op, misses)
                    if job is None:
                        if label in self.lost:
                            del pending[label]
                        continue
                    fractions[label] = float(job.get("fraction") or 0.0)
                    details[label] = str(job.get("detail") or "")
                    if job["state"] == "done":
                        finished[label] = job["result"]["phases"][0]
                        del pending[label]
                    elif job["state"] in ("failed", "stopped"):
                        self._lose(refs[label], op, f"job {job['state']}: {job.get('error')}")
                        del pending[label]
                hooks.progress(op, sum(fractions.values()) / len(fractions),
                               live_total(details.values(), len(finished), len(jobs)))
                if pending and time.monotonic() > deadline:
                    self._stop_all(pending, refs, wait=False)
                    for label in pending:
                        self._lose(refs[label], op, f"{op} did not end within {self._phase_timeout():g} s")
                    pending = {}
                time.sleep(POLL_S if pending else 0)
        except BaseException:
            self._stop_all(pending, refs, wait=True)
            raise
        return finished

    def _poll(self, ref: AgentRef, job_id: str, op: str, misses: dict[str, int]) -> dict[str, Any] | None:
        try:
            job = self.client(ref).status(job_id)
        except AgentUnreachable as exc:
            misses[ref.label] += 1
            if misses[ref.label] >= LOST_AFTER:
                self._lose(ref, op, exc.one_line())
            return None
        except BackupbenchError as exc:   # e.g. 404: the agent restarted and forgot the job
            self._lose(ref, op, exc.one_line())
            return None
        misses[ref.label] = 0
        return job

    def _stop_all(self, pending: dict[str, str], refs: dict[str, AgentRef], wait: bool) -> None:
        """Every pending job asked to stop; with wait, until each ended (its agent deleted its objects)."""
        for label, job_id in pending.items():
            try:
                self.client(refs[label]).stop(job_id)
            except BackupbenchError:
                pass
        deadline = time.monotonic() + (STOP_WAIT_S if wait else 0.0)
        left = dict(pending)
        while left and time.monotonic() < deadline:
            for label, job_id in list(left.items()):
                try:
                    if self.client(refs[label]).status(job_id)["state"] != "running":
                        del left[label]
                except BackupbenchError:
                    del left[label]
            time.sleep(POLL_S if left else 0)

    def _phase_timeout(self) -> float:
        opts = self.inner.options
        per_agent = max(objects for objects, _ in self.shares().values()) * opts.object_size.low
        return PHASE_GRACE_S + START_LEAD_S + per_agent / SLOWEST_BPS + float(opts.request_timeout)

    def _record(self, op: str, finished: dict[str, dict[str, Any]], hooks: PhaseHooks) -> None:
        figures, per_host = merge_phase(op, finished)
        s3, creds = self.inner.connect()
        detail = {HOSTS: per_host, LOST_HOSTS: dict(self.lost), "endpoint": s3.endpoint, "bucket": s3.bucket,
                  "prefixes": {ref.label: agent_prefix(self._run_id, ref.label) for ref in self.agents},
                  "credentials_from": creds.source, "merged": MERGE_NOTE,
                  "errors_by_kind": errors_by_kind(finished), "units": {"hosts_reporting": "hosts"}}
        if self._folder is not None:
            detail["latencies"] = agents_latency.write(self._folder, op, finished)
        hooks.finished(op, figures, detail, failed=every_request_failed(figures))

    def cleanup(self, target: Path | None, run_id: str, hooks: PhaseHooks) -> None:
        """The run's prefix, every agent's below it, deleted from here: a lost or stopped agent
        may have left objects."""
        artefact_id, self._objects_id = self._objects_id, None
        if artefact_id is None:
            return
        s3, creds = self.inner.connect()
        prefix = run_prefix(run_id)
        try:
            deleted = self.inner.engine.delete_prefix(s3, creds, prefix)
        except BackupbenchError as exc:
            # Stays in the journal for `backupbench cleanup`; the note says where they are.
            self.notes.append(f"objects may be left under {prefix} in bucket {s3.bucket}: {exc.one_line()}")
            return
        hooks.removed(artefact_id, f"removed ({deleted:,} left by the agents deleted here)")


def on_agents(workload_name: str, built: object, agents: str, token_file: Path | None,
              trust: Trust | None = None) -> AgentsWorkload:
    """`built` (an s3 workload) from the agents of --agents, trusted as `trust` says (None: the
    system's CAs); InputError for anything else."""
    definition = WORKLOADS.get(workload_name)
    if definition is None or not definition.capabilities.agents or not isinstance(built, S3Workload):
        from_agents = names_where(lambda capabilities: capabilities.agents)
        raise InputError(f"--agents applies to --workload {' or '.join(from_agents)}, not {workload_name}",
                         "drop --agents")
    if token_file is None:
        raise InputError("--agents needs --agent-token-file: the token the agents were started with")
    try:
        token = token_file.read_text().strip()
    except OSError as exc:
        raise InputError(f"--agent-token-file {token_file}: {exc.strerror}") from None
    if not token:
        raise InputError(f"--agent-token-file {token_file} is empty")
    refuse_unsupported(built)
    refs = parse_agents(agents)
    if (built.options.object_count or 0) < len(refs):
        raise InputError(f"--objects {built.options.object_count} is fewer than the {len(refs)} agents",
                         "give every agent at least one object")
    return AgentsWorkload(built, refs, token, trust or Trust())


def execute(request: RunRequest, workload: AgentsWorkload, reporter: Reporter) -> RunRecord:
    return execute_remote(request, workload, reporter)
