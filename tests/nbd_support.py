"""A minimal NBD client over a unix socket, enough to time requests through nbdkit on the host.

The fixed-newstyle handshake with NBD_OPT_EXPORT_NAME and simple replies (the protocol's
baseline, which every server speaks): no nbdsh, qemu-io or nbd-client needed on the machine.
Requests may be pipelined (`submit` several, then `collect`), as QEMU sends them.
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path

NBDMAGIC = b"NBDMAGIC"
IHAVEOPT = b"IHAVEOPT"
FLAG_FIXED_NEWSTYLE = 1
FLAG_NO_ZEROES = 2
OPT_EXPORT_NAME = 1
REQUEST_MAGIC = 0x25609513
REPLY_MAGIC = 0x67446698
CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH = 0, 1, 2, 3


class NbdClient:
    def __init__(self, socket_path: Path, timeout: float = 60.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(socket_path))
        self._handle = 0
        self._pending: dict[int, tuple[int, int]] = {}   # handle -> (command, length)
        self.size = self._handshake()

    def _recv(self, count: int) -> bytes:
        data = bytearray()
        while len(data) < count:
            chunk = self.sock.recv(count - len(data))
            if not chunk:
                raise ConnectionError("the NBD server closed the connection")
            data += chunk
        return bytes(data)

    def _handshake(self) -> int:
        if self._recv(8) != NBDMAGIC or self._recv(8) != IHAVEOPT:
            raise ConnectionError("not a fixed-newstyle NBD server")
        (server_flags,) = struct.unpack(">H", self._recv(2))
        no_zeroes = server_flags & FLAG_NO_ZEROES
        self.sock.sendall(struct.pack(">I", FLAG_FIXED_NEWSTYLE | no_zeroes))
        self.sock.sendall(IHAVEOPT + struct.pack(">II", OPT_EXPORT_NAME, 0))
        size, _flags = struct.unpack(">QH", self._recv(10))
        if not no_zeroes:
            self._recv(124)
        return size

    def submit(self, command: int, offset: int, length: int, data: bytes = b"") -> int:
        self._handle += 1
        header = struct.pack(">IHHQQI", REQUEST_MAGIC, 0, command, self._handle, offset, length)
        self.sock.sendall(header + data)
        self._pending[self._handle] = (command, length)
        return self._handle

    def collect(self) -> tuple[int, bytes]:
        """The next reply: (handle, data read); an error reply raises."""
        magic, error, handle = struct.unpack(">IIQ", self._recv(16))
        if magic != REPLY_MAGIC:
            raise ConnectionError(f"bad reply magic {magic:#x}")
        command, length = self._pending.pop(handle)
        if error:
            raise OSError(error, f"NBD command {command} failed")
        return handle, self._recv(length) if command == CMD_READ else b""

    def read(self, offset: int, length: int) -> bytes:
        self.submit(CMD_READ, offset, length)
        return self.collect()[1]

    def write(self, offset: int, data: bytes) -> None:
        self.submit(CMD_WRITE, offset, len(data), data)
        self.collect()

    def flush(self) -> None:
        self.submit(CMD_FLUSH, 0, 0)
        self.collect()

    def close(self) -> None:
        try:
            self.sock.sendall(struct.pack(">IHHQQI", REQUEST_MAGIC, 0, CMD_DISC, 0, 0, 0))
        except OSError:
            pass
        self.sock.close()

    def __enter__(self) -> "NbdClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
