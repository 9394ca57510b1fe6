"""The seeking disk model for real, on the host, no VM: nbdkit with the C filter serving a sparse
image, requests through a Python NBD client (tests/nbd_support.py).

The filter logs what it charged each request; every line must be the Python reference's
arithmetic to the nanosecond (lab/diskmodel.py), and its totals the sum of the lines. Timing is
checked only one way that load cannot break (a request is never served faster than the model)
and one generous way (not many times slower).
"""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path

import pytest
from nbd_support import CMD_READ, NbdClient

from backupbench.errors import ToolMissingError
from backupbench.lab import nbd
from backupbench.lab.diskmodel import DiskModel
from backupbench.units import KiB, MiB


def _missing() -> str | None:
    if shutil.which("nbdkit") is None:
        return "nbdkit is missing (scripts/install-lab-deps.sh installs it; make test does)"
    try:
        nbd.filter_path()
    except ToolMissingError as exc:
        return exc.message
    return None


pytestmark = [pytest.mark.real, pytest.mark.skipif(_missing() is not None, reason=_missing() or "")]

CAPACITY = 64 * MiB
# A quick disk: the test's 60-odd requests take about a second.
MODEL = DiskModel(average_seek_ns=2_000_000, track_seek_ns=200_000, rpm=15000, transfer_rate=100_000_000)


@pytest.fixture
def served(tmp_path):
    image = tmp_path / "d0.img"
    with open(image, "xb") as handle:
        handle.truncate(CAPACITY)
    servers = nbd.DiskServers(MODEL, tmp_path)
    [socket] = servers.start([image], log=True)
    try:
        yield servers, socket, tmp_path / "d0.diskmodel-log"
    finally:
        servers.stop()


def _timed(requests: list[tuple[int, int]], client: NbdClient, depth: int = 1) -> float:
    """Reads of (offset, count), `depth` in flight at most; seconds taken."""
    started = time.monotonic()
    pending = 0
    for offset, count in requests:
        client.submit(CMD_READ, offset, count)
        pending += 1
        if pending >= depth:
            client.collect()
            pending -= 1
    for _ in range(pending):
        client.collect()
    return time.monotonic() - started


def _charged(requests: list[tuple[int, int]], head: int) -> tuple[int, int]:
    """What the model charges for the requests in order from `head`: (ns, the head after)."""
    total = 0
    for offset, count in requests:
        total += MODEL.service(head, offset, count, CAPACITY).total_ns
        head = offset + count
    return total, head


def test_the_filter_charges_what_the_reference_says(served):
    servers, socket, log = served
    rng = random.Random(39)
    sequential = [(i * 256 * KiB, 256 * KiB) for i in range(16)]
    scattered = [(rng.randrange(CAPACITY // (64 * KiB)) * 64 * KiB, 64 * KiB) for _ in range(24)]
    with NbdClient(socket) as client:
        assert client.size == CAPACITY
        seq_s = _timed(sequential, client)
        rand_s = _timed(scattered, client, depth=4)
        client.write(5 * MiB, b"seeking" * 1000)
        client.flush()
        assert client.read(5 * MiB, 7000) == b"seeking" * 1000
    servers.stop()

    lines = [line.split() for line in log.read_text().splitlines()]
    assert [line[0] for line in lines] == ["R"] * 40 + ["W", "R"]   # the flush is answered, not charged
    head = 0
    for op, offset, count, distance, seek, rotation, transfer, _late in lines:
        service = MODEL.service(head, int(offset), int(count), CAPACITY)
        assert (int(distance), int(seek), int(rotation), int(transfer)) == (
            service.distance, service.seek_ns, service.rotation_ns, service.transfer_ns), (op, offset)
        head = int(offset) + int(count)

    stats = servers.stats(0)
    assert (stats["requests"], stats["reads"], stats["writes"]) == (42, 41, 1)
    assert stats["bytes_read"] == 16 * 256 * KiB + 24 * 64 * KiB + 7000
    assert stats["seek_ns"] == sum(int(line[4]) for line in lines)
    assert stats["rotation_ns"] == sum(int(line[5]) for line in lines)
    assert stats["transfer_ns"] == sum(int(line[6]) for line in lines)
    assert stats["seeks"] == sum(line[3] != "0" for line in lines)

    # Never faster than the model (a request may start at most the slack before it came, where the
    # previous one ended); slower only by the machine's load, so the upper bound is wide.
    seq_ns, head = _charged(sequential, 0)
    rand_ns, _ = _charged(scattered, head)
    assert seq_ns == 16 * 2_621_440                    # sequential: the transfer alone, 256 KiB at 100 MB/s
    assert seq_s >= seq_ns / 1e9 - MODEL.slack_ns / 1e9
    assert rand_s >= rand_ns / 1e9 - MODEL.slack_ns / 1e9
    assert rand_s <= 3 * rand_ns / 1e9 + 2.0, (rand_s, rand_ns)
    assert rand_ns / 24 > seq_ns / 16                 # a scattered 64 KiB read costs more than 256 KiB in a row


def test_a_server_that_cannot_start_says_why(tmp_path):
    image = tmp_path / "d0.img"
    image.write_bytes(b"\0" * 4096)
    servers = nbd.DiskServers(MODEL, tmp_path, filter_so=tmp_path / "not-a-filter.so")
    with pytest.raises(nbd.DiskServerError, match="nbdkit could not serve lab disk 0"):
        servers.start([image])
    assert servers.servers == []


def test_the_server_ends_with_its_owner(tmp_path: Path):
    image = tmp_path / "d0.img"
    with open(image, "xb") as handle:
        handle.truncate(CAPACITY)
    servers = nbd.DiskServers(MODEL, tmp_path)
    servers.start([image])
    [server] = servers.servers
    assert server.argv[0] == "nbdkit" and server.running()
    servers.stop()
    assert not server.running()
    assert servers.stats(0)["requests"] == 0       # written on the way out


CHILD = """
import sys, time
from pathlib import Path
from backupbench.lab import nbd
from backupbench.lab.diskmodel import DiskModel
folder = Path(sys.argv[1])
servers = nbd.DiskServers(DiskModel(), folder)
servers.start([folder / "d0.img"])
print(servers.pids[0], flush=True)
time.sleep(600)
"""


def test_a_killed_backupbench_takes_its_disk_servers_along(tmp_path: Path):
    import os
    import signal
    import subprocess
    import sys

    from backupbench.process import running

    with open(tmp_path / "d0.img", "xb") as handle:
        handle.truncate(CAPACITY)
    owner = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        server = int(owner.stdout.readline())
        assert running(server)
        os.kill(owner.pid, signal.SIGKILL)   # no cleanup code runs: pdeathsig alone must end nbdkit
        owner.wait(timeout=10)
        deadline = time.monotonic() + 10
        while running(server) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not running(server)
    finally:
        owner.kill()
        owner.stdout.close()
