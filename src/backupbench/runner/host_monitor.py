"""Each host's 1 s monitor samples during a multi-host run, fetched from its `backupbench agent`.

`run --hosts` (fio's servers) and `run --agents` (S3 from agents) measure I/O that this machine
does not carry, so its own monitor is off. The agent on each host samples it all the time and
keeps an hour (agent/feed.py); here those samples are fetched while the run goes on and written,
one file per host, in the local monitor's CSV format (monitor/csvlog.py):

    with sampling({"10.0.0.5": client, ...}, folder, hooks, workload.notes) as hooks:
        ...  # the phases, told to these hooks

One thread per host asks its agent for the samples after the last one it has, every second,
each call bounded by POLL_TIMEOUT_S: a slow or dead host holds up neither the others nor the
run, and what a failed call missed comes with the next (`since`). An agent that fails LOST_AFTER
calls in a row, or refuses the token, is named in the run's notes and left alone; one that
restarted (another feed instance in its answer) is noted and read again from its first sample.

Each measured phase gets a timeline (its HostAccount's, results/phase.py): its span by this machine's clock and each
host's CSV and the disks its line sums: those under the agent's root, else the host's whole disks. The report cuts each host's line out of its CSV by that span, which
takes the hosts' clocks to agree with this one (NTP keeps them within milliseconds), as
runner/agents.py does for its common wall time.
"""

from __future__ import annotations

import ipaddress
import re
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from backupbench import __version__
from backupbench.agent.client import AgentAuthError, AgentClient, AgentRefused, AgentUnreachable
from backupbench.agent.protocol import MAX_SAMPLES_PER_ANSWER
from backupbench.agent.startup import load_token
from backupbench.agent.tls import AgentTrustError, Trust
from backupbench.engines.fio_client import Host
from backupbench.recipe.hosts import AGENT_PORT
from backupbench.results.phase import HOST_TIMELINE
from backupbench.errors import BackupbenchError, RefusedError
from backupbench.monitor.csvlog import CsvLog
from backupbench.monitor.procfs import LoadAvg, Memory
from backupbench.monitor.rates import CpuPercent, DiskRates, Sample
from backupbench.workloads.base import PhaseHooks

POLL_INTERVAL_S = 1.0
# A host's newest sample older than this is not "right now" (its agent is late or lost).
LIVE_S = 3.0
POLL_TIMEOUT_S = 3.0
# Three calls in a row (2 to 12 s): past a passing hiccup, and a dead host is given up on soon.
LOST_AFTER = 3
# After the run, how long to wait for each agent's sample covering its last moment.
TAIL_WAIT_S = 1.5
DETAIL_KEY = HOST_TIMELINE  # handed with a phase's figures; the record keeps it typed (results/phase.py)
_NOT_SAMPLED = ("no per-host timeline: the hosts' own disks were not sampled. Start `backupbench agent "
                f"--listen ADDR:{AGENT_PORT} --token-file F --root DIR --tls-cert C --tls-key K` on each "
                "host (backupbench hosts agent-unit prints a systemd unit)")
NO_TIMELINE_NOTE = _NOT_SAMPLED + " and add --agent-token-file F to draw one"
# apply has no such flag: a recipe names the token file in its [hosts].
NO_TIMELINE_NOTE_RECIPE = _NOT_SAMPLED + " and add agent_token_file = F to the recipe's [hosts] to draw one"


def csv_name(tag: str) -> str:
    return f"monitor.{tag}.csv"


def file_tags(names: Sequence[str]) -> dict[str, str]:
    """A file-name-safe tag per host name ('10.0.0.5:8766' -> '10.0.0.5_8766'), distinct."""
    tags: dict[str, str] = {}
    for name in names:
        tag = re.sub(r"[^A-Za-z0-9._-]", "_", name) or "host"
        while tag in tags.values():
            tag += "_"
        tags[name] = tag
    return tags


def sample_from_wire(data: Mapping[str, Any]) -> Sample:
    """A monitor answer's sample (agent/protocol.py sample_dict) as the Sample it was made from."""
    cpu, memory, load = data.get("cpu"), data.get("memory"), data.get("load")
    return Sample(wall=float(data["wall"]), elapsed_s=float(data["elapsed_s"]), interval_s=float(data["interval_s"]),
                  cpu=CpuPercent(**cpu) if cpu else None, memory=Memory(**memory) if memory else None,
                  load=LoadAvg(**load) if load else None,
                  disks={name: DiskRates(**rates) for name, rates in (data.get("disks") or {}).items()})


def disk_mib_s(sample: Sample, disks: Sequence[str]) -> float:
    """Read+write MiB/s summed over `disks` (those with rates in this interval)."""
    return sum(sample.disks[d].rMB_s + sample.disks[d].wMB_s for d in disks if d in sample.disks)


def in_span(wall: float, interval_s: float, start: float, end: float) -> bool:
    """Whether a sample (its interval ending at `wall`) belongs to the span: its middle is in
    it. analysis/hosts.py cuts the report's lines by the same rule."""
    return start <= wall - interval_s / 2 <= end


# ---- the agents of `run --hosts` -------------------------------------------------------------

def _machine(address: str) -> str:
    """One spelling per machine address: IPv6 has several (fd00::5, fd00:0::5), names ignore case."""
    try:
        return ipaddress.ip_address(address).compressed
    except ValueError:
        return address.lower()


def host_agents(hosts: Sequence[Host], token_file: Path | None, port: int = AGENT_PORT,
                trust: Trust | None = None) -> dict[str, AgentClient]:
    """{host name: its agent's client} at each host's address on `port`, trusted as `trust` says
    (None: the system's CAs); {} without a token file (the run then has no per-host timeline).

    Several fio servers on one address (other ports) are one machine with one agent: its disks
    carry all their I/O, so it is fetched once and drawn as one line, named by the address
    ('10.0.0.5' for 10.0.0.5:8765 and 10.0.0.5:8766) rather than twice under each server's name."""
    if token_file is None:
        return {}
    token = load_token(token_file)
    by_machine: dict[str, list[Host]] = {}
    for host in hosts:
        by_machine.setdefault(_machine(host.address), []).append(host)
    clients = {}
    for servers in by_machine.values():
        first = servers[0]
        shown = f"[{first.address}]" if first.ipv6 else first.address
        clients[first.name if len(servers) == 1 else shown] = AgentClient(f"{shown}:{port}", token, trust=trust)
    return clients


def check_agents(clients: Mapping[str, AgentClient]) -> dict[str, str]:
    """Every agent reachable, taking the token, on this version: {host: version}, or RefusedError
    naming each that is not (as engines/fio_client.check_servers does for fio's servers)."""
    versions: dict[str, str] = {}
    problems: list[str] = []
    for name, client in clients.items():
        try:
            version = str(client.hello().get("version", "?"))
        except BackupbenchError as exc:
            problems.append(f"{name}: {exc.message}")
            continue
        if version != __version__:
            problems.append(f"{name}: agent {client.address} runs backupbench {version}, this is {__version__}")
        versions[name] = version
    if problems:
        raise RefusedError("agent check failed: " + "; ".join(problems),
                           "start `backupbench agent --listen ADDR:PORT --token-file F --root DIR --tls-cert C --tls-key "
                           "K` (this version, this token) on each host (backupbench hosts agent-unit prints a unit), or "
                           "drop --agent-token-file (a recipe: [hosts] agent_token_file)")
    return versions


# ---- one host's feed -------------------------------------------------------------------------

@dataclass
class PhaseFigures:
    """One host's whole-disk throughput over one phase."""

    mean_mib_s: float
    peak_mib_s: float
    samples: int


@dataclass
class HostFeed:
    """What has been fetched from one host's agent; its CSV is written as samples arrive, so
    an interrupted run keeps every sample fetched."""

    name: str
    client: AgentClient
    path: Path
    since: int = 0
    reached: bool = False
    # The agent's feed as first reached (agent/feed.py `instance`, new at each start): another
    # one later is a restarted agent, whose numbers began again at 1.
    instance: str = ""
    misses: int = 0
    lost: str = ""
    devices: list[str] = field(default_factory=list)
    disks: list[str] = field(default_factory=list)
    # Whether `disks` are the device stack under the agent's root (agent/feed.py), and that stack.
    of_target: bool = False
    stack: str = ""
    # (end of interval, interval, whole-disk MiB/s) of every sample: the phases' figures.
    points: list[tuple[float, float, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    csv: CsvLog | None = None

    def poll(self) -> bool:
        """Fetch what the agent has after `since`; True when more is waiting (a full answer)."""
        try:
            answer = self.client.monitor(since=self.since)
        except (AgentAuthError, AgentRefused, AgentTrustError) as exc:   # a certificate swapped mid-run too
            self.lose(exc.one_line())
            return False
        except AgentUnreachable as exc:
            self.misses += 1
            if self.misses >= LOST_AFTER:
                self.lose(f"{exc.one_line()} ({self.misses} calls in a row)")
            return False
        self.misses = 0
        instance = str(answer.get("instance", ""))
        if not self.reached:
            # The agent keeps the hour before the run, oldest first: start from its newest sample.
            self.reached, self.instance = True, instance
            self.since = max(0, int(answer.get("last", 0)) - 1)
            return True
        # Its numbers going back tell only a restart reached before it passed `since` again.
        if instance != self.instance or int(answer.get("last", 0)) < self.since:
            self.notes.append(f"agent of host {self.name} restarted during the run: its timeline has a gap while "
                              "it was down, and is read again from the restarted agent's first sample")
            self.instance, self.since = instance, 0
            return True
        if answer.get("dropped"):
            self.notes.append(f"host {self.name}: {answer['dropped']} samples were older than the agent keeps "
                              "and are missing from its timeline")
        samples = answer.get("samples") or []
        self._write(answer, samples)
        return len(samples) >= MAX_SAMPLES_PER_ANSWER

    def _write(self, answer: Mapping[str, Any], samples: list[dict[str, Any]]) -> None:
        if self.csv is None:
            self.devices = [str(d) for d in answer.get("devices") or []]
            target = [str(d) for d in answer.get("target_disks") or []]
            self.disks = target or [str(d) for d in answer.get("disks") or self.devices]
            self.of_target, self.stack = bool(target), str(answer.get("target") or "")
            self.csv = CsvLog(self.path, self.devices)
        for wire in samples:
            sample = sample_from_wire(wire)
            self.csv.write(sample)
            self.points.append((sample.wall, sample.interval_s, disk_mib_s(sample, self.disks)))
            self.since = int(wire["seq"])

    def lose(self, why: str) -> None:
        if not self.lost:
            self.lost = why
            self.notes.append(f"host {self.name}: no more samples from its agent ({why}); its timeline ends there")

    def close(self) -> None:
        if self.csv is not None:
            self.csv.close()

    def figures(self, start: float, end: float) -> PhaseFigures | None:
        values = [mib for wall, interval, mib in self.points if in_span(wall, interval, start, end)]
        if not values:
            return None
        return PhaseFigures(sum(values) / len(values), max(values), len(values))


# ---- every host, during the run ----------------------------------------------------------------

class HostSampler:
    """One thread per host fetching its agent's samples; phases marked from the workload's hooks."""

    def __init__(self, clients: Mapping[str, AgentClient], folder: Path, interval: float = POLL_INTERVAL_S,
                 timeout: float = POLL_TIMEOUT_S):
        tags = file_tags(list(clients))
        self.feeds = [HostFeed(name, client.with_timeout(timeout), Path(folder) / csv_name(tags[name]))
                      for name, client in clients.items()]
        self.interval = interval
        self.timeout = timeout
        self.spans: dict[str, tuple[float, float]] = {}
        # After stop(): {phase: {host: its whole-disk throughput over the phase}}.
        self.figures: dict[str, dict[str, PhaseFigures]] = {}
        self.notes: list[str] = []
        self._open: dict[str, float] = {}
        self._stopping = threading.Event()
        self._tail = True
        self._stop_wall = 0.0
        self._threads: dict[str, threading.Thread] = {}

    def start(self) -> "HostSampler":
        for feed in self.feeds:
            thread = threading.Thread(target=self._follow, args=(feed,), name=f"backupbench-host-monitor-{feed.name}",
                                      daemon=True)
            thread.start()
            self._threads[feed.name] = thread
        return self

    def _follow(self, feed: HostFeed) -> None:
        try:
            more = feed.poll()
            while not feed.lost and not self._stopping.wait(0 if more else self.interval):
                more = feed.poll()
            if self._tail:
                self._catch_up(feed)
        except Exception as exc:  # noqa: BLE001 - a full disk or a bad answer must not end the run
            feed.lose(f"fetching its samples failed: {exc!r}")
        finally:
            feed.close()

    def _catch_up(self, feed: HostFeed) -> None:
        """The samples up to the moment the run stopped: the agent makes the one covering it
        up to an interval later."""
        deadline = time.monotonic() + TAIL_WAIT_S
        while not feed.lost:
            more = feed.poll()
            newest = feed.points[-1][0] if feed.points else 0.0
            if not more and (newest >= self._stop_wall or time.monotonic() >= deadline):
                return
            time.sleep(0 if more else min(0.25, max(0.0, deadline - time.monotonic())))

    def live(self, now: float | None = None) -> str:
        """The hosts' disks right now, for a phase's progress: 'hosts' disks 412.3 MiB/s (2 of 2
        hosts)' from each host's newest sample of the last few seconds; '' with none."""
        now = time.time() if now is None else now
        recent = [feed.points[-1][2] for feed in self.feeds if feed.points and now - feed.points[-1][0] <= LIVE_S]
        if not recent:
            return ""
        return f"hosts' disks {sum(recent):,.1f} MiB/s ({len(recent)} of {len(self.feeds)} hosts)"

    def phase_started(self, name: str) -> None:
        self._open[name] = time.time()

    def phase_finished(self, name: str) -> dict[str, Any] | None:
        """The phase's host timeline: its span and where each host's samples are."""
        start = self._open.pop(name, None)
        if start is None:
            return None
        end = time.time()
        self.spans[name] = (start, end)
        return {"from_wall": start, "to_wall": end, "interval_s": self.interval,
                "hosts": {feed.name: {"csv": feed.path.name, "disks": list(feed.disks), "of_target": feed.of_target,
                                      "stack": feed.stack}
                          for feed in self.feeds if feed.csv is not None},
                "lost": {feed.name: feed.lost for feed in self.feeds if feed.lost}}

    def stop(self, tail: bool = True) -> dict[str, dict[str, PhaseFigures]]:
        """Stop fetching (with tail: after each host's samples up to now) and close every CSV;
        the phases' figures per host. Returns within a few call timeouts, whatever the hosts do."""
        self._tail = tail
        self._stop_wall = time.time()
        self._stopping.set()
        deadline = time.monotonic() + (TAIL_WAIT_S if tail else 0.0) + 2 * self.timeout + 1.0
        for thread in self._threads.values():
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        self.notes = [note for feed in self.feeds for note in feed.notes]
        self.notes += [f"host {name}: fetching its samples did not stop in time; its CSV may lack the last ones"
                       for name, thread in self._threads.items() if thread.is_alive()]
        self.figures = {phase: {feed.name: found for feed in self.feeds if (found := feed.figures(*span))}
                        for phase, span in self.spans.items()}
        return self.figures


@dataclass
class SampledHooks:
    """The workload's PhaseHooks, each measured phase's span marked on the way through."""

    inner: PhaseHooks
    sampler: HostSampler

    def started(self, name: str, title: str, pattern: str, measured: bool = True, warmup_s: float = 0.0) -> None:
        if measured:
            self.sampler.phase_started(name)
        self.inner.started(name, title, pattern, measured, warmup_s=warmup_s)

    def progress(self, name: str, fraction: float, detail: str) -> None:
        # fio's client prints no live figures: each host's agent's newest sample stands in for them.
        live = self.sampler.live()
        self.inner.progress(name, fraction, ", ".join(part for part in (detail, live) if part))

    def finished(self, name: str, figures: dict[str, float], detail: dict[str, Any] | None = None,
                 failed: bool = False) -> None:
        timeline = self.sampler.phase_finished(name)
        if timeline is not None:
            detail = {**(detail or {}), DETAIL_KEY: timeline}
        self.inner.finished(name, figures, detail, failed=failed)

    def will_create(self, artefact: dict[str, Any]) -> int | None:
        return self.inner.will_create(artefact)

    def removed(self, artefact_id: int | None, how: str = "removed") -> None:
        self.inner.removed(artefact_id, how)


@contextmanager
def sampling(clients: Mapping[str, AgentClient], folder: Path, hooks: PhaseHooks,
             notes: list[str]) -> Iterator[PhaseHooks]:
    """Within the block, every host's samples are fetched into `folder`; the hooks given back
    mark each phase. The hosts' problems join `notes` (the workload's, hence the run's). With no
    clients: the hooks as they are, and nothing fetched."""
    if not clients:
        yield hooks
        return
    sampler = HostSampler(clients, folder).start()
    tail = False
    try:
        yield SampledHooks(hooks, sampler)
        tail = True
    finally:
        # Interrupted or failed: no waiting for the samples after the last moment.
        sampler.stop(tail=tail)
        notes += [note for note in sampler.notes if note not in notes]
