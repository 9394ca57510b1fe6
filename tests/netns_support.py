"""The tests' one builder of network namespaces, and the `backupbench agent`s and fio servers
they start in them.

`Agent` is one agent process (on 127.0.0.1, or inside a namespace through a prefix such as
`hosts.exec_prefix(n)`), serving TLS with a self-signed certificate made for its address unless
given one (or `plain=True`: --insecure-plain-http); `agent.trust` / `agent.client(token)` call it
pinned to that certificate, `agent.trust_args` are the controller's flags for it.

`Hosts` makes namespaces TAG-N (N = 1, 2, ...) on one bridge here: 10.231.X.1 is this side,
10.231.X.(N+1) is namespace N, so this side reaches every namespace and the namespaces reach
each other (MinIO in one, agents in the others). X starts from the test process's pid and an
instance count, and the first free one from there is claimed while holding a machine-wide claim
(an abstract socket name), so concurrent test runs (xdist workers too) take other subnets. In each
namespace it starts what a test asks for: a fio server, an agent (its certificate from the
Hosts' own CA: `hosts.trust_args` is `--agent-ca CA`). Traffic goes only to those addresses.
Everything made is removed by `teardown()`, which the `netns` fixture calls in `finally`, and a
namespace left behind fails the test.

The `netns` fixture (root: conftest.ROOT_FIXTURES) hands a test an empty Hosts;
`netns.with_fio(count)` fills namespaces 1..count with a fio server each. Module-scoped
fixtures use `hosts_for(folder)`, the same thing as a context manager.
"""

from __future__ import annotations

import itertools
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest
from host_support import require_root_tool, require_tools, wait_for_fio_server
from tls_support import Authority, Cert, self_signed

BACKUPBENCH = str(Path(sys.executable).parent / "backupbench")
FIO_PORT = 8765
AGENT_PORT = 7480


def token_file(folder: Path) -> Path:
    """A fresh token in a file the agent accepts (mode 0600)."""
    path = folder / "agent-token"
    path.write_text(secrets.token_hex(32) + "\n")
    os.chmod(path, 0o600)
    return path


class Agent:
    """One `backupbench agent` process; stop() ends it (SIGTERM, then SIGKILL) and says how."""

    def __init__(self, prefix: list[str], listen: str, token: Path, root: Path, log: Path,
                 cert: Cert | None = None, plain: bool = False):
        self.log = log
        self.cert = None if plain else cert or self_signed(log.parent, listen.rsplit(":", 1)[0].strip("[]"),
                                                             f"{log.stem}-cert")
        transport = ["--insecure-plain-http"] if self.cert is None else self.cert.agent_args()
        self._stderr = open(log, "wb")
        # Its temporary folders in the test's own: an agent a test kills cannot remove them itself.
        self.proc = subprocess.Popen([*prefix, BACKUPBENCH, "agent", "--listen", listen, "--token-file",
                                      str(token), "--root", str(root), *transport],
                                     stdout=subprocess.PIPE, stderr=self._stderr, stdin=subprocess.DEVNULL,
                                     env={**os.environ, "TMPDIR": str(log.parent)})
        try:
            self.address = self._listening(deadline=time.monotonic() + 30)
        except BaseException:
            self.stop()
            raise
        self.rest = ""  # what it printed after "listening on", read by stop()

    @property
    def trust(self):
        from backupbench.agent.tls import Trust

        if self.cert is None:
            return Trust.choose(plain=True)
        return Trust.choose(fingerprints=[self.cert.fingerprint])

    @property
    def trust_args(self) -> list[str]:
        """The controller's flags that trust this agent."""
        if self.cert is None:
            return ["--agent-insecure-plain-http"]
        return ["--agent-fingerprint", self.cert.fingerprint]

    def client(self, token: str | Path, timeout: float = 10.0):
        from backupbench.agent.client import AgentClient

        text = token.read_text().strip() if isinstance(token, Path) else token
        return AgentClient(self.address, text, timeout=timeout, trust=self.trust)

    def _listening(self, deadline: float) -> str:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.5)
            if ready:
                line = self.proc.stdout.readline().decode()
                assert "listening on" in line, line + self.log.read_text()
                self.start_line = line.strip()
                return line.split("listening on ")[1].split()[0]
            if self.proc.poll() is not None:
                break
        raise AssertionError(f"the agent did not start: {self.log.read_text()}")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc.stdout is not None and not self.proc.stdout.closed:  # stop() may come twice
            self.rest = self.proc.stdout.read().decode()
            self.proc.stdout.close()
        self._stderr.close()
        return self.proc.returncode


@contextmanager
def _subnet_claim() -> Iterator[None]:
    """Held while a free subnet is found and taken, machine-wide (subnets are), by every test
    process, and leaving nothing behind: an abstract Unix socket name only one can bind."""
    claim = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    deadline = time.monotonic() + 60
    while True:
        try:
            claim.bind("\0backupbench-tests-subnet")
            break
        except OSError:
            if time.monotonic() > deadline:
                claim.close()
                raise AssertionError("another test process held the subnet claim for 60 s") from None
            time.sleep(0.05)
    try:
        yield
    finally:
        claim.close()


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


_instances = itertools.count()


def net_namespace_prefix(name: str) -> list[str]:
    """A command prefix that enters the named network namespace (`ip netns add NAME`) and
    nothing else, exec'ing the command in place as `ip netns exec` does."""
    return ["nsenter", f"--net=/run/netns/{name}"]


@dataclass
class Hosts:
    """Namespaces TAG-N on the bridge TAGbr, subnet 10.231.X.0/24 (see the module's docstring)."""

    tag: str
    subnet: int
    folder: Path
    addresses: dict[int, str] = field(default_factory=dict)
    servers: dict[int, subprocess.Popen] = field(default_factory=dict)
    agents: dict[int, Agent] = field(default_factory=dict)
    namespaces: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    _authority: Authority | None = field(default=None, repr=False)

    @property
    def authority(self) -> Authority:
        if self._authority is None:
            self._authority = Authority(self.folder, f"{self.tag}-ca")
        return self._authority

    @property
    def trust_args(self) -> list[str]:
        """The controller's flags that trust every agent these hosts start."""
        return ["--agent-ca", str(self.authority.ca)]

    @property
    def net(self) -> str:
        return f"10.231.{self.subnet}"

    @property
    def bridge(self) -> str:
        return f"{self.tag}br"

    @classmethod
    def for_this_test(cls, folder: Path) -> "Hosts":
        instance = next(_instances)
        return cls(tag=f"bbt{os.getpid() % 100000}{chr(ord('a') + instance % 26)}",
                   subnet=20 + (os.getpid() * 7 + instance) % 230, folder=folder)

    def exec_prefix(self, n: int) -> list[str]:
        """What runs a command inside namespace n: in its network namespace only.

        Not `ip netns exec`, which also gives the command a mount namespace of its own, a copy
        of every mount at its start; this machine's / is private, so an umount here does not
        reach that copy, and a filesystem another test mounted on its loop device then stays
        mounted there for as long as the command runs: that test's wipefs after its umount
        failed with EBUSY (seen in the btrfs fault test beside the hosts tests)."""
        return net_namespace_prefix(f"{self.tag}-{n}")

    def _bridge_up(self) -> None:
        # Test processes (xdist workers) make bridges at the same time: the first free subnet
        # from this one on is found and taken while holding the machine-wide claim, so two
        # never take the same.
        with _subnet_claim():
            in_use = subprocess.run(["ip", "-br", "addr"], capture_output=True, text=True, timeout=20).stdout
            free = next((n for n in (20 + (self.subnet - 20 + step) % 230 for step in range(230))
                         if f" 10.231.{n}." not in in_use), None)
            assert free is not None, "every 10.231.X.0/24 subnet (X 20-249) is in use on this machine"
            self.subnet = free
            _ip("link", "add", self.bridge, "type", "bridge")
            self.links.append(self.bridge)
            _ip("addr", "add", f"{self.net}.1/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")

    def make(self, n: int) -> str:
        """Namespace n on the bridge; its address."""
        if not self.links:
            self._bridge_up()
        ns, here, there = f"{self.tag}-{n}", f"{self.tag}{n}h", f"{self.tag}{n}n"
        _ip("netns", "add", ns)
        self.namespaces.append(ns)
        _ip("link", "add", here, "type", "veth", "peer", "name", there)
        self.links.append(here)
        _ip("link", "set", here, "master", self.bridge)
        _ip("link", "set", here, "up")
        _ip("link", "set", there, "netns", ns)
        _ip("-n", ns, "addr", "add", f"{self.net}.{n + 1}/24", "dev", there)
        _ip("-n", ns, "link", "set", there, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        self.addresses[n] = f"{self.net}.{n + 1}"
        return self.addresses[n]

    def with_fio(self, count: int = 2) -> "Hosts":
        """Namespaces 1..count, a fio server in each."""
        require_tools("fio")
        for n in range(1, count + 1):
            self.make(n)
            self.start_fio(n)
        return self

    def start_fio(self, n: int) -> None:
        """fio's server, in a session of its own: it forks a child per connection, and the
        teardown must take those children (the jobs) too."""
        from backupbench.engines import fio_client

        argv = [*self.exec_prefix(n), "fio", f"--server=ip:{self.addresses[n]},{FIO_PORT}"]
        self.servers[n] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL, start_new_session=True)
        wait_for_fio_server(fio_client.Host(self.addresses[n], FIO_PORT), f"fio server in {self.tag}-{n}")

    def start_agent(self, n: int, token: Path, port: int = AGENT_PORT) -> Agent:
        root = self.folder / f"agent-root-{n}"
        root.mkdir(exist_ok=True)
        agent = Agent(self.exec_prefix(n), f"{self.addresses[n]}:{port}", token, root,
                      self.folder / f"agent-{n}.log", cert=self.authority.issue(self.addresses[n], f"agent-{n}"))
        self.agents[n] = agent
        return agent

    def stop_fio(self, n: int) -> None:
        server = self.servers.pop(n, None)
        if server is not None and server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
        if server is not None:
            server.wait(timeout=20)

    def teardown(self) -> list[str]:
        problems = []
        for n in list(self.servers):
            self.stop_fio(n)
        for n, agent in list(self.agents.items()):
            code = agent.stop()
            if code not in (0, -signal.SIGKILL):
                problems.append(f"agent {n} ended with {code}: {agent.log.read_text()[-500:]}")
        for ns in self.namespaces:
            done = subprocess.run(["ip", "netns", "del", ns], capture_output=True, text=True, timeout=20)
            if done.returncode:
                problems.append(f"ip netns del {ns}: {done.stderr.strip()}")
        for link in reversed(self.links):  # the veths go with their peers' namespaces; make sure
            subprocess.run(["ip", "link", "del", link], capture_output=True, timeout=20)
        problems += [f"namespace {ns} still there" for ns in self.left_behind()]
        links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True, timeout=20).stdout
        problems += [f"link {link} still there" for link in self.links
                     if any(line.split("@")[0].split()[0] == link for line in links.splitlines() if line.split())]
        return problems

    def left_behind(self) -> list[str]:
        """This Hosts' namespaces that `ip netns list` still shows."""
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=20).stdout
        names = {line.split()[0] for line in listed.splitlines() if line.split()}
        return [ns for ns in self.namespaces if ns in names]


@contextmanager
def hosts_for(folder: Path) -> Iterator[Hosts]:
    """An empty Hosts for a fixture of any scope; everything it made is removed on the way
    out, even on failure, and a namespace or link left behind fails the test."""
    require_root_tool("ip")
    made = Hosts.for_this_test(folder)
    try:
        yield made
    finally:
        problems = made.teardown()
        assert not problems, problems


@pytest.fixture
def netns(tmp_path):
    """An empty Hosts: netns.make(n) adds namespace n, netns.with_fio(count) fio servers."""
    with hosts_for(tmp_path) as made:
        yield made


def no_network_prefix() -> list[str]:
    """`unshare --net` (a network namespace of its own with no way out) where this user may make
    one; nothing where not (the command then runs with the machine's network)."""
    if os.geteuid() == 0 and shutil.which("unshare"):
        if subprocess.run(["unshare", "--net", "true"], capture_output=True, timeout=30).returncode == 0:
            return ["unshare", "--net"]
    return []
