"""`backupbench agent` on a real network (issue 23), as real processes on 127.0.0.1: TLS with
certificates this test makes (openssl), pinned by CA or by fingerprint; plain HTTP only when
both sides say so; wildcard addresses and relative roots refused; fields matched whole; and
idle, half-open and slow connections that cannot keep a request with the token from its answer.

Network: 127.0.0.1 only. Every agent, socket, certificate and folder is made here and removed
in `finally` blocks or with the test's temporary folder.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import subprocess
import threading

import pytest

from backupbench.agent.client import AgentClient, AgentRefused, AgentUnreachable
from backupbench.agent.reception import HEAD_DEADLINE_S, MAX_PENDING
from backupbench.agent.tls import AgentTrustError, Trust
from netns_support import BACKUPBENCH, Agent, token_file
from tls_support import Authority, self_signed


@pytest.fixture
def token(tmp_path):
    return token_file(tmp_path)


@contextlib.contextmanager
def agent_on_loopback(tmp_path, token, **kwargs):
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    agent = Agent([], "127.0.0.1:0", token, root, tmp_path / f"agent-{len(list(tmp_path.iterdir()))}.log", **kwargs)
    try:
        yield agent
    finally:
        assert agent.stop() == 0, agent.log.read_text()
    assert list(root.iterdir()) == []


def _agent_cli(tmp_path, token, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "root").mkdir(exist_ok=True)
    return subprocess.run([BACKUPBENCH, "agent", "--token-file", str(token), *args], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


# ---- TLS ----------------------------------------------------------------------------------------

def test_tls_with_the_ca_the_controller_pins_and_nothing_else(tmp_path, token):
    authority = Authority(tmp_path)
    with agent_on_loopback(tmp_path, token, cert=authority.issue("127.0.0.1", "agent")) as agent:
        secret = token.read_text().strip()
        trusted = AgentClient(agent.address, secret, trust=Trust.choose(ca_file=authority.ca))
        assert trusted.hello()["agent"] == "backupbench"
        other = Authority(tmp_path, "other-ca")
        for trust in (Trust.choose(ca_file=other.ca), Trust.choose()):   # another CA; the system's
            with pytest.raises(AgentTrustError, match="certificate not trusted"):
                AgentClient(agent.address, secret, trust=trust).hello()
        # The certificate names 127.0.0.1: reached by another name, it is not this agent's.
        port = agent.address.rsplit(":", 1)[1]
        with pytest.raises(AgentTrustError, match="certificate not trusted"):
            AgentClient(f"localhost:{port}", secret, trust=Trust.choose(ca_file=authority.ca)).hello()
    # The start line gives the fingerprint a controller would pin instead.
    assert agent.start_line.endswith(f"(TLS, certificate {agent.cert.fingerprint}; root {tmp_path / 'root'})")


class _Listener:
    """A TLS server that records every byte a client sends it after the handshake."""

    def __init__(self, tmp_path):
        made = self_signed(tmp_path, "127.0.0.1", "listener")
        self.fingerprint = made.fingerprint
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(made.cert, made.key)
        self.sock = context.wrap_socket(socket.create_server(("127.0.0.1", 0)), server_side=True)
        self.sock.settimeout(60)
        self.received, self.handshakes = b"", 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        self.handshakes += 1
        with conn:
            conn.settimeout(30)
            with contextlib.suppress(OSError):
                while chunk := conn.recv(65536):
                    self.received += chunk


def test_a_wrong_fingerprint_is_refused_in_one_line_before_the_token_is_sent(tmp_path, token):
    listener = _Listener(tmp_path)
    try:
        address = f"127.0.0.1:{listener.sock.getsockname()[1]}"
        wrong = "sha256:" + "00" * 32
        done = subprocess.run([BACKUPBENCH, "run", "--workload", "s3", "--endpoint", "http://127.0.0.1:9", "--bucket",
                               "bench", "--objects", "4", "--agents", address, "--agent-token-file", str(token),
                               "--agent-fingerprint", wrong, "--results", str(tmp_path / "results"), "--quiet"],
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                              env={**os.environ, "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"})
        listener.thread.join(30)
    finally:
        listener.sock.close()
    line = _one_line(done.stderr)
    assert done.returncode == 3, done.stderr
    assert f"agent {address} presented certificate {listener.fingerprint}, not the one pinned with " \
           "--agent-fingerprint; nothing was sent to it" in line
    assert listener.handshakes == 1 and listener.received == b""   # the handshake, then not a byte


# ---- plain HTTP only when both sides say so ----------------------------------------------------

def test_an_agent_without_tls_or_the_plain_flag_is_refused(tmp_path, token):
    done = _agent_cli(tmp_path, token, "--listen", "127.0.0.1:0", "--root", str(tmp_path / "root"))
    assert done.returncode == 2 and "needs --tls-cert FILE and --tls-key FILE" in _one_line(done.stderr)
    assert "--insecure-plain-http" in done.stderr
    made = self_signed(tmp_path, "127.0.0.1")
    both = _agent_cli(tmp_path, token, "--listen", "127.0.0.1:0", "--root", str(tmp_path / "root"),
                      *made.agent_args(), "--insecure-plain-http")
    assert both.returncode == 2 and "do not go together" in _one_line(both.stderr)
    half = _agent_cli(tmp_path, token, "--listen", "127.0.0.1:0", "--root", str(tmp_path / "root"),
                      "--tls-cert", str(made.cert))
    assert half.returncode == 2 and "needs --tls-cert FILE and --tls-key FILE" in _one_line(half.stderr)


def test_a_tls_agent_answers_plain_http_with_one_line_and_no_work(tmp_path, token):
    with agent_on_loopback(tmp_path, token) as agent:
        plain = AgentClient(agent.address, token.read_text().strip(), trust=Trust.choose(plain=True))
        with pytest.raises(AgentRefused, match="this agent takes HTTPS only"):
            plain.smallfiles_run(run_id="p1", subfolder="p", files=5, file_size=1)
        assert agent.client(token).hello()["agent"] == "backupbench"


def test_a_plain_agent_is_called_only_by_a_plain_controller(tmp_path, token):
    with agent_on_loopback(tmp_path, token, plain=True) as agent:
        secret = token.read_text().strip()
        with pytest.raises(AgentUnreachable, match="no TLS handshake") as caught:
            AgentClient(agent.address, secret).hello()
        assert "--agent-insecure-plain-http" in caught.value.one_line()
        assert agent.client(token).hello()["agent"] == "backupbench"
    assert "(PLAIN HTTP: the token and S3 keys cross the network in clear; root " in agent.start_line


# ---- addresses, root, fields -----------------------------------------------------------------

@pytest.mark.parametrize("listen", ["0.0.0.0:0", "[::]:0", "[::ffff:0.0.0.0]:0", "[::ffff:0:0]:0", "[::%lo]:0"])
def test_every_spelling_of_every_address_is_refused_by_the_agent(tmp_path, token, listen):
    made = self_signed(tmp_path, "127.0.0.1")
    done = _agent_cli(tmp_path, token, "--listen", listen, "--root", str(tmp_path / "root"), *made.agent_args())
    assert done.returncode == 3 and "would listen on every address of this host" in _one_line(done.stderr)


@pytest.mark.parametrize("listen", ["0:0", "127.1:0", "0x7f000001:0"])
def test_an_address_only_the_socket_functions_read_is_refused(tmp_path, token, listen):
    made = self_signed(tmp_path, "127.0.0.1")
    done = _agent_cli(tmp_path, token, "--listen", listen, "--root", str(tmp_path / "root"), *made.agent_args())
    assert done.returncode == 2 and "is not an IP address" in _one_line(done.stderr)


@pytest.mark.parametrize("root", ["", ".", "root"])
def test_an_empty_or_relative_root_is_refused_by_the_agent(tmp_path, token, root):
    made = self_signed(tmp_path, "127.0.0.1")
    done = subprocess.run([BACKUPBENCH, "agent", "--listen", "127.0.0.1:0", "--token-file", str(token), "--root", root,
                           *made.agent_args()], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and _one_line(done.stderr).startswith("backupbench: --root ")


def test_fields_with_a_final_newline_are_refused_and_run_nothing(tmp_path, token):
    with agent_on_loopback(tmp_path, token) as agent:
        client = agent.client(token)
        status, answer = client.call("smallfiles-run", run_id="n1", subfolder="nl\n", files=5, file_size=1)
        assert status == 400 and answer["error"].startswith("subfolder:")
        status, answer = client.call("s3-run", endpoint="http://127.0.0.1:19400\n", bucket="bench",
                                     prefix="backupbench/n1/", objects=1, object_size=1, access_key="a", secret_key="b")
        assert status == 400 and answer["error"].startswith("endpoint:")
        status, answer = client.call("status", job_id="abc\n")
        assert status == 400 and answer["error"].startswith("job_id:")


# ---- connections that cannot starve the controller ---------------------------------------------

def _closed_by_peer(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except (socket.timeout, TimeoutError):
        return False


def _idle_and_half_open(address: str, idle: int, half: int) -> list[socket.socket]:
    host, port = address.rsplit(":", 1)
    held = [socket.create_connection((host, int(port)), timeout=10) for _ in range(idle)]
    for kind in range(half):   # half a TLS hello, or half an HTTP head: waiting for the rest
        sock = socket.create_connection((host, int(port)), timeout=10)
        sock.sendall(b"\x16\x03\x01\x02" if kind % 2 else b"POST /v1 HTTP/1.1\r\nAuthoriz")
        held.append(sock)
    return held


@pytest.mark.parametrize("plain", [False, True], ids=["tls", "plain"])
def test_half_open_connections_neither_hold_up_the_controller_nor_stay(tmp_path, token, plain):
    with agent_on_loopback(tmp_path, token, plain=plain) as agent:
        held = _idle_and_half_open(agent.address, 184, 16)
        try:
            client = agent.client(token, timeout=30)
            for _ in range(5):
                assert client.hello()["agent"] == "backupbench"
            # Each is closed by the agent once its deadline has passed: none waits for ever.
            assert all(_closed_by_peer(sock, HEAD_DEADLINE_S + 20) for sock in held)
        finally:
            for sock in held:
                sock.close()


def test_beyond_what_the_agent_holds_the_oldest_connection_makes_room(tmp_path, token):
    with agent_on_loopback(tmp_path, token) as agent:
        held = _idle_and_half_open(agent.address, MAX_PENDING + 10, 0)
        try:
            assert agent.client(token, timeout=30).hello()["agent"] == "backupbench"
            assert all(_closed_by_peer(sock, 5) for sock in held[:10])   # the oldest ten went first
            assert agent.client(token, timeout=30).hello()["agent"] == "backupbench"
        finally:
            for sock in held:
                sock.close()
