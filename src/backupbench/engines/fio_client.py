"""fio's own client/server mode: several hosts each running `fio --server`, driven from here.

One `fio --client=H1,PORT JOB1 --client=H2,PORT JOB2 ...` per phase: every host gets the same
job apart from its test file's name (hosts may share one NFS/SMB repository, and two servers
must not write one file). fio's client-mode JSON lists `client_stats` (one entry per job per
host, each with the `hostname` and `port` it was reached at) plus an "All clients" aggregate,
which we ignore: we add the hosts up ourselves, so a lost host is simply absent from the sum.
We ask for json+, whose latency histograms (`bins`) let the total's percentiles be read from
every host's I/O together (fio_bins.py); the aggregate entry has none.

An IPv6 host is written [ADDR]:PORT (or bare, without a port) and given to fio as
`--client=ip6:ADDR,PORT`, the only form fio 3.33 reads; it reports such a host back under the
address text it was given, compared here as addresses.

fio's client cannot delete files on a server: a test file is removed by a tiny read job with
`unlink=1` sent to that host (it also works when the file is gone: fio lays out 4 KiB first).
"""

from __future__ import annotations

import ipaddress
import json
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Callable

from backupbench import artefacts, process
from backupbench.artefacts import TAG
from backupbench.engines import fio_json
from backupbench.engines.fio_json import ALL_CLIENTS, FioSummary
from backupbench.errors import EngineError, InputError, ProcessError, RefusedError
from backupbench.redaction import redact_url
from backupbench.paths import Syntax, for_program

DEFAULT_PORT = 8765
PROBE_TIMEOUT_S = 15.0
CLEANUP_TIMEOUT_S = 20.0
POLL_SECONDS = 0.25
_ADDRESS = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]{0,252}")
_BRACKETED = re.compile(r"\[(?P<address>[^\]]*)\](?::(?P<port>.*))?")
HOSTS_FIX = "give ADDR, ADDR:PORT, [IPv6] or [IPv6]:PORT, comma-separated (e.g. 10.0.0.5,10.0.0.6:8766,[fd00::5]:8766)"
# What fio prints (stdout) when a server goes away mid-run: "client: host=ADDR disconnected",
# or "... timed out" when it stops answering without closing the connection.
_LOST = re.compile(r"host=(\S+?),? (disconnected|timed out)")
# The line fio's client prints for each server it reached (normal output):
# "hostname=vm, be=0, 64-bit, os=Linux, arch=x86-64, fio=fio-3.33, flags=1".
_PROBE = re.compile(r"hostname=(?P<name>[^,]*),.*\bfio=(?P<version>[^,\s]+)")
REMOTE_FILE = "fio-remote-file"
PROBE_JOB = "[backupbench-probe]\nioengine=null\nsize=4k\nrw=read\n"


@dataclass(frozen=True, order=True)
class Host:
    address: str  # a host name, an IPv4 address or an IPv6 address (no brackets)
    port: int = DEFAULT_PORT

    @property
    def ipv6(self) -> bool:
        return ":" in self.address

    @property
    def name(self) -> str:
        """How tables, figures and messages name it: as the user would type it."""
        shown = f"[{self.address}]" if self.ipv6 else self.address
        return shown if self.port == DEFAULT_PORT else f"{shown}:{self.port}"

    @property
    def client_arg(self) -> str:
        return f"--client={self._fio_address},{self.port}"

    @property
    def server_arg(self) -> str:
        """What the host's own `fio --server` is started with to listen there."""
        return f"--server={self._fio_address if self.ipv6 else 'ip:' + self.address},{self.port}"

    @property
    def _fio_address(self) -> str:
        # fio takes a bare address as IPv4 or a name, and "[::1]" as a name it cannot resolve.
        return f"ip6:{self.address}" if self.ipv6 else self.address

    @property
    def file_tag(self) -> str:
        """Safe in a file name, distinct per host (two servers may share one address). An IPv6
        address's colons become "_", which no host name holds: fio job files and SMB shares
        both treat ":" specially."""
        return f"{self.address.replace(':', '_')}-{self.port}"

    def answers_to(self, reported: str) -> bool:
        """Whether fio's `hostname` (or its lost-host message) names this host: fio repeats the
        address text it was given, and an IPv6 address has more than one spelling."""
        return _same_address(reported, self.address)


def _same_address(one: str, other: str) -> bool:
    try:
        return ipaddress.ip_address(one) == ipaddress.ip_address(other)
    except ValueError:
        return one == other


def _port(item: str, text: str | None) -> int:
    if text is None:
        return DEFAULT_PORT
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise InputError(f"--hosts: {redact_url(item)!r} has no valid port (1-65535)", HOSTS_FIX)
    return int(text)


def _ipv6(item: str, text: str) -> str:
    """The address in its one canonical spelling, or InputError."""
    try:
        address = ipaddress.IPv6Address(text)
    except ValueError:
        raise InputError(f"--hosts: {redact_url(item)!r} is not an IPv6 address", HOSTS_FIX) from None
    if address.scope_id:
        raise InputError(f"--hosts: {redact_url(item)!r} has a zone (%{address.scope_id}), which fio's client cannot use",
                         "give a global or unique local IPv6 address")
    return str(address)


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def parse_host(item: str) -> Host:
    """'h', 'h:8766', '10.0.0.5', '[fd00::5]', '[fd00::5]:8766' or a bare IPv6 address that
    cannot be read as ADDR:PORT ('fd00::5' yes, 'fd00::5:8766' no: which was meant?)."""
    bracketed = _BRACKETED.fullmatch(item)
    if bracketed:
        return Host(_ipv6(item, bracketed["address"]), _port(item, bracketed["port"]))
    if item.count(":") > 1:
        head, _, tail = item.rpartition(":")
        if _is_ipv6(item) and _is_ipv6(head) and tail.isdigit() and 0 < int(tail) < 65536:
            raise InputError(f"--hosts: {redact_url(item)!r} could be an IPv6 address or {head} with port {tail}",
                             f"write [{item}] for the address, [{head}]:{tail} for the port")
        return Host(_ipv6(item, item))
    address, colon, port_text = item.partition(":")
    if not _ADDRESS.fullmatch(address):
        raise InputError(f"--hosts: {redact_url(item)!r} is not a host name, IPv4 or IPv6 address", HOSTS_FIX)
    return Host(address, _port(item, port_text if colon else None))


def parse_hosts(text: str) -> tuple[Host, ...]:
    """'h1,h2:8766,[fd00::5]' -> hosts; InputError naming the first bad one."""
    if "@" in text:  # quoted nowhere: what precedes the '@' may be a password, commas and all
        raise InputError("--hosts must not carry credentials (USER@ or USER:PASSWORD@): fio's servers take none",
                         HOSTS_FIX)
    hosts: list[Host] = []
    for item in (part.strip() for part in text.split(",")):
        host = parse_host(item)
        if host in hosts:
            raise InputError(f"--hosts names {host.name} twice")
        hosts.append(host)
    return tuple(hosts)


def remote_path(text: str) -> PurePosixPath:
    """The directory on every host; absolute, since it is not resolved here but there."""
    path = PurePosixPath(text)
    if not path.is_absolute():
        raise InputError(f"with --hosts, PATH is a directory on every host and must be absolute, not {text!r}")
    for_program(path, Syntax.FIO_JOB)  # refuse what a job file cannot say, before any host is asked
    return path


# ---- reading client-mode results ------------------------------------------------------------

@dataclass(frozen=True)
class ClientResult:
    # Every host that reported: bandwidth and IOPS summed, percentiles from the hosts'
    # histograms merged (the worst host's p99 when fio gave none: see total_p99_merged).
    total: FioSummary
    per_host: dict[str, FioSummary]   # by Host.name
    lost: dict[str, str]              # Host.name -> why it has no result
    notes: tuple[str, ...] = ()

    @property
    def total_p99_merged(self) -> bool:
        """Whether the total's p99 (each direction with I/O) was read from merged histograms."""
        measured = [d for d in (self.total.read, self.total.write) if d.p99_ns is not None]
        return bool(measured) and all(d.bins is not None for d in measured)

    def total_percentiles(self) -> dict[str, dict[str, int]]:
        """{"write": {"p50": ns, "p95": ns, "p99": ns, "p99.9": ns}} for each direction of the
        total with a histogram."""
        found = {}
        for direction, stats in (("read", self.total.read), ("write", self.total.write)):
            values = stats.percentiles()
            if values:
                found[direction] = {f"p{p:g}": ns for p, ns in values.items()}
        return found


def _owner(entry: dict[str, Any], hosts: tuple[Host, ...]) -> Host | None:
    name, port = entry.get("hostname"), entry.get("port")
    if name is None:
        return None
    matches = [h for h in hosts if h.answers_to(str(name)) and (port is None or int(port) == h.port)]
    return matches[0] if len(matches) == 1 else None


def _by_host(entries: list[dict[str, Any]], hosts: tuple[Host, ...]) -> tuple[dict[Host, list], list, list[str]]:
    grouped: dict[Host, list[dict[str, Any]]] = {}
    unnamed: list[dict[str, Any]] = []
    for entry in entries:
        owner = _owner(entry, hosts)
        if owner is None:
            unnamed.append(entry)
        else:
            grouped.setdefault(owner, []).append(entry)
    notes: list[str] = []
    silent = [h for h in hosts if h not in grouped]
    if unnamed and len(silent) == 1:
        # Every other host is accounted for: the nameless result can only be this one's.
        grouped[silent[0]] = unnamed
        notes.append(f"fio gave {len(unnamed)} result(s) without a host name; attributed to {silent[0].name}, "
                     "the only host without one")
        unnamed = []
    elif unnamed:
        notes.append(f"fio gave {len(unnamed)} result(s) without a host name it could be matched by; "
                     "counted in the total, shown under no host")
    return grouped, unnamed, notes


def _summary(entries: list[dict[str, Any]], version: str) -> FioSummary:
    return fio_json.parse({"fio version": version, "jobs": entries})


def parse_clients(data: dict[str, Any], hosts: tuple[Host, ...], said: str = "") -> ClientResult:
    """Per-host summaries and their total; `said` is fio's stdout (lost-host messages)."""
    version = str(data.get("fio version", "unknown"))
    entries = [e for e in data.get("client_stats") or [] if e.get("jobname") != ALL_CLIENTS]
    grouped, unnamed, notes = _by_host(entries, hosts)
    per_host: dict[str, FioSummary] = {}
    lost: dict[str, str] = {}
    counted: list[dict[str, Any]] = list(unnamed)
    for host in hosts:
        if host not in grouped:
            lost[host.name] = "no result: the host was lost during the phase"
            continue
        try:
            per_host[host.name] = _summary(grouped[host], version)
        except EngineError as exc:  # that host's job failed (e.g. its disk filled): the others stand
            lost[host.name] = exc.message
            continue
        counted += grouped[host]
    for address, how in _LOST.findall(said):
        for host in hosts:
            if host.answers_to(address) and host.name not in per_host:
                lost[host.name] = f"fio's client says the host {how}"
    if not counted:
        raise EngineError("no host reported a result: " + "; ".join(f"{n}: {why}" for n, why in lost.items()))
    return ClientResult(_summary(counted, version), per_host, lost, tuple(notes))


def parse_client_text(text: str, hosts: tuple[Host, ...], said: str = "") -> ClientResult:
    """The --output file: with --client, fio writes messages such as "client: host=ADDR
    disconnected" and the servers' own lines into it around the JSON document."""
    start = 0 if text.startswith("{") else text.find("\n{") + 1
    if text[start:start + 1] != "{":
        lines = [line for line in (said + text).splitlines() if line.strip()]
        raise EngineError("fio printed no JSON result: " + (lines[-1].strip() if lines else "no output"))
    try:
        data, end = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise EngineError(f"fio's JSON result is unreadable: {exc}") from exc
    return parse_clients(data, hosts, said + text[:start] + text[end:])


# ---- commands ------------------------------------------------------------------------------

def client_argv(binary: str, jobs: list[tuple[Host, Path]], output_json: Path) -> list[str]:
    """One fio client for every host: each --client is followed by the job file it runs."""
    # json+: the latency histograms the total's percentiles are merged from.
    argv = [binary, "--output-format=json+", f"--output={for_program(output_json)}"]
    for host, job_file in jobs:
        argv += [host.client_arg, for_program(job_file)]
    return argv


@dataclass(frozen=True)
class ServerInfo:
    host: Host
    fio_version: str
    server_hostname: str


def probe(host: Host, binary: str = "fio", timeout_s: float = PROBE_TIMEOUT_S) -> ServerInfo:
    """The server's fio version, or EngineError saying why it cannot be had. Runs a job that does
    no I/O (ioengine=null) on it: fio 3.33 has no version query, but its client prints each
    server's version on connecting."""
    with tempfile.TemporaryDirectory(prefix="backupbench-probe-") as scratch:
        job = Path(scratch) / "probe.fio"
        job.write_text(PROBE_JOB)
        try:
            done = process.run([binary, host.client_arg, str(job)], timeout=timeout_s, check=False)
        except ProcessError as exc:
            raise EngineError(exc.message) from exc
    found = _PROBE.search(done.stdout)
    if done.returncode != 0 or found is None:
        said = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        raise EngineError(said[-1].strip() if said else f"fio exit code {done.returncode}")
    return ServerInfo(host, found["version"], found["name"])


def check_servers(hosts: tuple[Host, ...], local_version: str, binary: str = "fio") -> dict[str, ServerInfo]:
    """Every host reachable and running this fio release, or RefusedError naming each that is not."""
    infos: dict[str, ServerInfo] = {}
    problems: list[str] = []
    for host in hosts:
        try:
            infos[host.name] = info = probe(host, binary)
        except EngineError as exc:
            problems.append(f"{host.name} is not reachable ({exc.message})")
            continue
        if info.fio_version != local_version:
            problems.append(f"{host.name} runs {info.fio_version}, this client {local_version}")
    if problems:
        raise RefusedError("fio server check failed: " + "; ".join(problems),
                           "start `fio --server=ip:ADDR,PORT` (ip6:ADDR,PORT for IPv6) on each host "
                           "with the same fio release "
                           "(backupbench hosts unit prints a systemd unit)")
    return infos


@dataclass
class ClientRun:
    result: ClientResult
    argv: list[str]
    elapsed_s: float
    said: str = field(repr=False, default="")


def run_clients(jobs: list[tuple[Host, Path]], output_json: Path, timeout_s: float, binary: str = "fio",
                progress: Callable[[float], None] = lambda fraction: None,
                expected_s: float | None = None) -> ClientRun:
    """Run one phase on every host; a host lost meanwhile is in result.lost, not an error."""
    said_file = output_json.with_suffix(".out")
    argv = client_argv(binary, jobs, output_json)
    started = time.monotonic()
    child = process.Background(argv, cwd=output_json.parent, stdout_path=said_file)
    try:
        while child.running():
            time.sleep(POLL_SECONDS)
            elapsed = time.monotonic() - started
            if expected_s:
                progress(min(elapsed / expected_s, 0.99))
            if elapsed > timeout_s:
                raise EngineError(f"fio's client did not finish within {timeout_s:g} s")
        done = child.wait()
    finally:
        child.stop()  # SIGINT: fio's client tells every server to stop its jobs
    said = said_file.read_text(errors="replace") + done.stderr
    text = output_json.read_text(errors="replace") if output_json.exists() else ""
    # Exit code 1 also means "a host was lost": the others' results are still in the JSON.
    result = parse_client_text(text, tuple(h for h, _ in jobs), said)
    progress(1.0)
    return ClientRun(result, argv, time.monotonic() - started, said)


# ---- removing a test file on a host ---------------------------------------------------------

def cleanup_job(test_file: PurePosixPath) -> str:
    return (f"; backupbench: removes {test_file} on the host (fio's client cannot delete remote files)\n"
            f"[backupbench-cleanup]\nfilename={for_program(test_file, Syntax.FIO_JOB)}\n"
            "rw=read\nsize=4k\nioengine=psync\nunlink=1\n")


def remove_on_host(host: Host, test_file: PurePosixPath, binary: str = "fio",
                   timeout_s: float = CLEANUP_TIMEOUT_S) -> None:
    """EngineError when the host cannot be reached: the file is then still there."""
    with tempfile.TemporaryDirectory(prefix="backupbench-cleanup-") as scratch:
        job = Path(scratch) / "cleanup.fio"
        job.write_text(cleanup_job(test_file))
        try:
            done = process.run([binary, host.client_arg, str(job)], timeout=timeout_s, check=False)
        except ProcessError as exc:
            raise EngineError(f"could not remove {test_file} on {host.name}: {exc.message}") from exc
    if done.returncode != 0:
        said = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        raise EngineError(f"could not remove {test_file} on {host.name}: "
                          f"{said[-1].strip() if said else done.returncode}")


def remote_test_file(directory: PurePosixPath, run_id: str, host: Host) -> PurePosixPath:
    """The test file of run `run_id` on `host`, in `directory` there."""
    # One file per host even in one directory: hosts may share a repository (NFS, SMB).
    return directory / f"{_remote_prefix(run_id)}{host.file_tag}.dat"


def _remote_prefix(run_id: str) -> str:
    return f"{TAG}-{run_id}-"


def remote_file(host: Host, test_file: PurePosixPath, run_id: str) -> dict[str, Any]:
    """The journal entry for a test file on a host (removed by `remove_remote_file`)."""
    return {"kind": REMOTE_FILE, "address": host.address, "port": host.port, "path": str(test_file),
            "tag": run_id, "what": f"test file on {host.name}"}


def remove_remote_file(artefact: dict[str, Any], run_id: str) -> artefacts.Outcome:
    """The journal sweep's remover for REMOTE_FILE (an artefacts.Remover)."""
    path = PurePosixPath(str(artefact.get("path", "")))
    if artefact.get("tag") != run_id or not path.name.startswith(_remote_prefix(run_id)):
        return artefacts.Outcome(artefacts.NOT_OURS, f"it is not named as backupbench names what run {run_id} creates")
    remove_on_host(Host(str(artefact.get("address")), int(artefact.get("port", DEFAULT_PORT))), path)
    return artefacts.Outcome(artefacts.REMOVED, "removed by a cleanup job on the host")
