"""How the agent takes connections: one thread, one selector, one deadline per connection.

Every connection is read here, without blocking, until its request is whole: the TLS handshake,
the head (refused at once unless it is POST /v1 with the token, and read as HTTP/1.1 by h11:
http_head.screen), then the body, as long as the Content-Length h11 read. Only then, and only
for a request with the token, is the connection handed to a worker (server.py), which computes
the answer and sends it. So a peer without the token never holds a thread, and a worker never
waits for a peer to send.

Bounds, so that peers without the token cannot starve those with it:
- each connection has HEAD_DEADLINE_S from its accept to send its whole request; one that has
  not is closed (a half-open connection, a slow handshake, a byte every few seconds);
- at most MAX_PENDING connections are held; the next one closes the oldest, which is the one
  nearest its deadline and, against a flood of idle connections, an idle one: a real request
  is read in milliseconds, long before it becomes the oldest;
- the backlog of connections not yet accepted is LISTEN_BACKLOG (the kernel caps it at
  net.core.somaxconn), and each wake-up accepts all that wait.
Memory: a head is at most http_head.MAX_HEAD_BYTES; a body is read only for a request with the
token, and at most protocol.MAX_BODY_BYTES. A refused request's answer is sent, the sending side
shut, and what the peer still sends read and dropped until it closes (or its deadline): closing
with unread data would reset the connection, and the peer would lose the answer.

TLS: on a TLS agent a connection's first byte must begin a TLS handshake (0x16); a plain HTTP
request there gets a plain 400 saying so. On a plain agent, a TLS handshake is closed at once.
"""

from __future__ import annotations

import errno
import logging
import selectors
import socket
import ssl
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from backupbench.agent.http_head import Refusal, head_end, refusal_bytes, screen
from backupbench.agent.protocol import MAX_BODY_BYTES

log = logging.getLogger("backupbench.agent")

HEAD_DEADLINE_S = 10.0
MAX_PENDING = 1024
LISTEN_BACKLOG = 1024
# Accepted per wake-up at most, so reading the connections already held is not put off.
ACCEPT_BURST = 256
READ_CHUNK = 64 * 1024
TLS_HANDSHAKE = 0x16
# What a refused peer may still send (its body) before it is simply closed.
MAX_DROPPED = MAX_BODY_BYTES + 64 * 1024
PEEK, HANDSHAKE, HEAD, BODY, SEND, LINGER, GONE = "peek", "handshake", "head", "body", "send", "linger", "gone"
PLAIN_ON_TLS = Refusal(400, "this agent takes HTTPS only (it was started with --tls-cert/--tls-key): call it over "
                            "TLS, not with --agent-insecure-plain-http")

# A complete request with the token: (socket, peer, body) -> whether a worker took it.
Deliver = Callable[[socket.socket, str, bytes], bool]


@dataclass(eq=False)
class Incoming:
    sock: socket.socket
    peer: str
    deadline: float
    state: str
    received: bytearray = field(default_factory=bytearray)
    head_length: int = 0
    body_length: int = 0
    out: bytes = b""
    dropped: int = 0


def _peer(address: object) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        return f"[{address[0]}]:{address[1]}" if ":" in str(address[0]) else f"{address[0]}:{address[1]}"
    return str(address)


class Reception:
    def __init__(self, listener: socket.socket, tls: ssl.SSLContext | None, token: bytes, deliver: Deliver,
                 busy: Callable[[], bool]):
        self._listener, self._tls, self._token = listener, tls, token
        self._deliver, self._busy = deliver, busy
        self._selector = selectors.DefaultSelector()
        # By accept time, so the oldest is first: the next to expire, the first to make room.
        self._pending: OrderedDict[int, Incoming] = OrderedDict()
        self._wake_read, self._wake_write = socket.socketpair()
        self._stopping = False
        listener.setblocking(False)

    @property
    def held(self) -> int:
        return len(self._pending)

    def stop(self) -> None:
        """Ends run() from another thread."""
        self._stopping = True
        try:
            self._wake_write.send(b"x")
        except OSError:
            pass

    def run(self) -> None:
        self._selector.register(self._listener, selectors.EVENT_READ, "listener")
        self._selector.register(self._wake_read, selectors.EVENT_READ, "wake")
        try:
            while not self._stopping:
                for key, _ in self._selector.select(self._timeout()):
                    if key.data == "listener":
                        self._accept()
                    elif key.data == "wake":
                        self._wake_read.recv(64)
                    else:
                        self._advance(key.data)
                self._expire(time.monotonic())
        finally:
            for conn in list(self._pending.values()):
                self._close(conn)
            self._selector.close()
            self._wake_read.close()
            self._wake_write.close()

    def _timeout(self) -> float:
        if not self._pending:
            return 1.0
        oldest = next(iter(self._pending.values()))
        return min(1.0, max(0.0, oldest.deadline - time.monotonic()))

    def _expire(self, now: float) -> None:
        while self._pending:
            oldest = next(iter(self._pending.values()))
            if oldest.deadline > now:
                return
            self._close(oldest)

    def _accept(self) -> None:
        for _ in range(ACCEPT_BURST):
            try:
                sock, address = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM) and self._pending:
                    self._close(next(iter(self._pending.values())))   # room for those still waiting
                    continue
                return   # ECONNABORTED and the like: that peer is gone already
            if len(self._pending) >= MAX_PENDING:
                self._close(next(iter(self._pending.values())))
            sock.setblocking(False)
            conn = Incoming(sock, _peer(address), time.monotonic() + HEAD_DEADLINE_S,
                            PEEK if self._tls is not None else HEAD)
            self._pending[id(conn)] = conn
            self._selector.register(sock, selectors.EVENT_READ, conn)

    # ---- one connection's steps ------------------------------------------------------------
    def _advance(self, conn: Incoming) -> None:
        """Take the connection as far as it goes without waiting; then wait for what it needs."""
        try:
            want = 0
            while not want and conn.state != GONE:
                want = self._STEPS[conn.state](self, conn)
            if conn.state != GONE:
                self._selector.modify(conn.sock, want, conn)
        except ssl.SSLWantReadError:
            self._selector.modify(conn.sock, selectors.EVENT_READ, conn)
        except ssl.SSLWantWriteError:
            self._selector.modify(conn.sock, selectors.EVENT_WRITE, conn)
        except (OSError, ValueError):   # reset, broken TLS, a socket closed meanwhile
            self._close(conn)
        except Exception as exc:  # noqa: BLE001 - one odd connection must not end the agent's serving
            log.warning("connection from %s dropped: %r", conn.peer, exc)
            self._close(conn)

    def _peek(self, conn: Incoming) -> int:
        try:
            first = conn.sock.recv(1, socket.MSG_PEEK)
        except BlockingIOError:
            return selectors.EVENT_READ
        if not first:
            self._close(conn)
        elif first[0] != TLS_HANDSHAKE:
            self._refuse(conn, PLAIN_ON_TLS)
        else:
            assert self._tls is not None
            self._selector.unregister(conn.sock)
            conn.sock = self._tls.wrap_socket(conn.sock, server_side=True, do_handshake_on_connect=False)
            self._selector.register(conn.sock, selectors.EVENT_READ, conn)
            conn.state = HANDSHAKE
        return 0

    def _handshake(self, conn: Incoming) -> int:
        conn.sock.do_handshake()   # SSLWant*Error: _advance waits for what it wants
        conn.state = HEAD
        return 0

    def _read(self, conn: Incoming) -> int:
        while True:
            try:
                chunk = conn.sock.recv(READ_CHUNK)
            except BlockingIOError:
                return selectors.EVENT_READ
            if not chunk:   # the peer gave up before its request ended
                self._close(conn)
                return 0
            conn.received += chunk
            try:
                if self._complete(conn):
                    return 0
            except Refusal as refusal:
                self._refuse(conn, refusal)
                return 0

    def _complete(self, conn: Incoming) -> bool:
        """Whether the request is whole (and handed on, or refused, or closed)."""
        if conn.state == HEAD:
            if self._tls is None and conn.received[:1] == bytes([TLS_HANDSHAKE]):
                self._close(conn)   # a TLS client at a plain agent: nothing it could read
                return True
            end = head_end(conn.received)
            if end < 0:
                return False
            conn.body_length = screen(bytes(conn.received[:end]), self._token)
            conn.head_length, conn.state = end, BODY
        if len(conn.received) - conn.head_length < conn.body_length:
            return False
        if self._busy():
            raise Refusal(503, "the agent is answering too many requests: try again")
        # One request per connection: bytes after the body are never read as another request.
        body = bytes(conn.received[conn.head_length:conn.head_length + conn.body_length])
        self._forget(conn)
        conn.state = GONE
        if not self._deliver(conn.sock, conn.peer, body):
            conn.sock.close()
        return True

    def _refuse(self, conn: Incoming, refusal: Refusal) -> None:
        conn.received = bytearray()
        conn.out, conn.state = refusal_bytes(refusal), SEND

    def _send(self, conn: Incoming) -> int:
        while conn.out:
            try:
                sent = conn.sock.send(conn.out)
            except BlockingIOError:
                return selectors.EVENT_WRITE
            conn.out = conn.out[sent:]
        try:
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        conn.state = LINGER
        return 0

    def _linger(self, conn: Incoming) -> int:
        while True:
            try:
                chunk = conn.sock.recv(READ_CHUNK)
            except BlockingIOError:
                return selectors.EVENT_READ
            conn.dropped += len(chunk)
            if not chunk or conn.dropped > MAX_DROPPED:
                self._close(conn)
                return 0

    _STEPS = {PEEK: _peek, HANDSHAKE: _handshake, HEAD: _read, BODY: _read, SEND: _send, LINGER: _linger}

    def _forget(self, conn: Incoming) -> None:
        self._pending.pop(id(conn), None)
        try:
            self._selector.unregister(conn.sock)
        except (KeyError, ValueError):
            pass

    def _close(self, conn: Incoming) -> None:
        self._forget(conn)
        conn.state = GONE
        try:
            conn.sock.close()
        except OSError:
            pass
