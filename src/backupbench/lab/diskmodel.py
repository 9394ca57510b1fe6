"""The lab's seeking disk: the model's arithmetic and its command queue, the Python reference of
the nbdkit filter (native/diskmodel, the disk in disk.c) that serves the lab's disks with it, and
what it predicts.

A request costs seek(d) + rotation(d) + bytes / rate, d being the distance from where the
previous request ended:
- seek(d) = 0 for d == 0, else track + (full - track) * sqrt(d / capacity). The square root is
  the usual fit of a voice-coil arm (accelerate, then coast: short seeks are dominated by the
  settle time, long ones grow with the root of the distance).
- rotation(d) = 0 for d == 0, else half a revolution (4.17 ms at 7,200 rpm): the mean wait for
  the sector, charged every time the head moves. The mean, not a seeded draw: a figure of the
  lab then depends on the requests alone, and a test can hold the filter to the nanosecond;
  the spread a real disk adds would only widen every bound.
- One transfer rate for the whole disk (no zones: a real disk's inner tracks are ~half as
  fast as its outer ones; the lab's disks are small, so one rate is the honest simplification).
Sequential requests pay nothing but the transfer, which is what a disk's read-ahead and write
cache make of a sequential stream; nothing else is cached.

The user gives the average seek (what datasheets quote: the mean over random positions on the
whole disk) and the track-to-track seek; for uniform random positions E[sqrt(d / C)] = 8/15, so
full stroke = track + (average - track) * 15/8 (8.5 ms and 0.8 ms -> 15.24 ms).

Command queueing (`schedule`): requests wait in a queue in arrival order and one at a time is
on the platter. When the disk is free it serves, among the first `queue_depth` waiting (what a
SATA disk's NCQ holds: 32 commands; the rest wait in the host's queue, in order), the next one in
an elevator's sweep (C-LOOK): the lowest start at or past the head, else the lowest of all (the
sweep starts again at the bottom); ties by arrival. A real disk reorders what is queued so; that is
why several sequential streams on one disk still run near its transfer rate, where serving
strictly in arrival order seeks between the streams on every request. A sweep, not the nearest
start: the head meets a stream's queued requests from above as often as from below, and
nearest-first then walks them backwards, each a short seek and half a revolution. A stream fed
just ahead of the head would hold the sweep forever, so the oldest waiting request is served once
`max_passes` later ones have been served before it (a count, not a time, so the order still
depends on the requests alone). Queue depth 1 is first come, first served.

The filter does the same double-precision operations in the same order and truncates each term
to whole nanoseconds, so `service` here and the delays it logs agree exactly, and `schedule`,
given the arrival times it logs, gives its order and start times to the nanosecond
(tests/integration/test_lab_diskmodel_nbd.py).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Sequence

from backupbench.units import MiB

NS = 1_000_000_000
# E[sqrt(|X - Y|)] for X, Y uniform on [0, 1]: the mean seek fraction of random positions.
MEAN_ROOT_DISTANCE = 8 / 15
# A gap between two requests shorter than this is the emulator's and nbdkit's own time, not idle
# disk time (the filter's comment says why). The guest's round trip under TCG on a busy 2-core
# host is 1-2 ms with spikes beyond: 1 ms left a 200 MB/s sequential read at 47-67 % of the rate,
# 5 ms at 84-97 %. It cannot make a disk faster than its model: a request still ends no earlier
# than the previous one's end plus its own service time.
DEFAULT_SLACK_NS = 5_000_000
# NCQ's 32 commands. Through QEMU (7.2) at most 16 reach an NBD disk at once (its NBD client's
# MAX_NBD_REQUESTS), so in the lab a depth above 16 is never filled.
DEFAULT_QUEUE_DEPTH = 32
# A disk's firmware bounds how long a queued command may be passed over (in time; here in requests,
# which keeps the order a function of the requests). 32 services of 512 KiB at 50 MiB/s is 0.3 s,
# of the order of Linux's mq-deadline read expiry (0.5 s).
DEFAULT_MAX_PASSES = 32


@dataclass(frozen=True)
class Service:
    """One request's cost: how far the head moved and the three terms, whole nanoseconds."""

    distance: int
    seek_ns: int
    rotation_ns: int
    transfer_ns: int

    @property
    def total_ns(self) -> int:
        return self.seek_ns + self.rotation_ns + self.transfer_ns


@dataclass(frozen=True)
class DiskModel:
    """A disk that seeks. Defaults: a 7,200 rpm SATA disk's datasheet (average seek 8.5 ms,
    track to track 0.8 ms, ~200 MB/s sustained on the outer tracks)."""

    average_seek_ns: int = 8_500_000
    track_seek_ns: int = 800_000
    rpm: int = 7200
    transfer_rate: int = 200_000_000  # bytes/s
    slack_ns: int = DEFAULT_SLACK_NS
    queue_depth: int = DEFAULT_QUEUE_DEPTH
    max_passes: int = DEFAULT_MAX_PASSES

    def __post_init__(self) -> None:
        if self.track_seek_ns <= 0 or self.rpm <= 0 or self.transfer_rate <= 0:
            raise ValueError("the track-to-track seek, rpm and transfer rate must be more than 0")
        if self.queue_depth < 1 or self.max_passes < 1:
            raise ValueError("the queue depth and the passes a request may be passed over must be at least 1")
        if self.average_seek_ns < self.track_seek_ns:
            raise ValueError("the average seek cannot be shorter than the track-to-track seek")

    @property
    def full_seek_ns(self) -> int:
        return self.track_seek_ns + round((self.average_seek_ns - self.track_seek_ns) / MEAN_ROOT_DISTANCE)

    @property
    def rotation_ns(self) -> int:
        """Half a revolution: 30 s / rpm."""
        return int(30e9 / self.rpm)

    def service(self, head: int, offset: int, count: int, capacity: int) -> Service:
        """What the filter charges a request of `count` bytes at `offset` with the head at `head`
        (where the last request ended), on a disk of `capacity` bytes."""
        distance = abs(offset - head)
        seek = rotation = 0
        if distance and capacity > 0:
            track, full = self.track_seek_ns, self.full_seek_ns
            seek = int(track + (full - track) * math.sqrt(distance / capacity))
            rotation = self.rotation_ns
        return Service(distance, seek, rotation, int(count * 1e9 / self.transfer_rate))

    def random_read_seconds(self, block: int, span: int, capacity: int) -> float:
        """Expected time of one `block`-byte request at a uniformly random place within the first
        `span` bytes of a disk of `capacity` (queue depth 1)."""
        track, full = self.track_seek_ns, self.full_seek_ns
        seek = track + (full - track) * MEAN_ROOT_DISTANCE * math.sqrt(min(span, capacity) / capacity)
        return (seek + self.rotation_ns + block * 1e9 / self.transfer_rate) / NS

    def random_rate(self, block: int, span: int, capacity: int) -> float:
        """Bytes/s of random `block`-byte requests, one at a time."""
        return block / self.random_read_seconds(block, span, capacity)

    def random_rate_queued(self, block: int, span: int, capacity: int, waiting: int, count: int = 20_000,
                           seed: int = 39) -> float:
        """Bytes/s of `block`-byte requests at random places within the first `span` bytes when
        `waiting` are always queued as the disk chooses (each one served replaced at once, as fio
        keeps its queue depth), served in the sweep's order. A seeded Monte Carlo of `count`
        requests through the queue's own choice: the same figure every time; with `waiting` 1 it
        is random_rate's case."""
        rng = random.Random(seed)
        requests: list[Arrival] = []

        def new() -> int:
            requests.append(Arrival(0, rng.randrange(max(1, span // block)) * block, block))
            return len(requests) - 1

        pending = [new() for _ in range(waiting)]
        passes: dict[int, int] = {}
        head = total = 0
        for _ in range(count):
            chosen, _aged = _choose(requests, pending[:self.queue_depth], head, passes, self.max_passes)
            pending.remove(chosen)
            pending.append(new())
            total += self.service(head, requests[chosen].offset, block, capacity).total_ns
            head = requests[chosen].offset + block
        return block * count / (total / NS)

    def filter_params(self) -> list[str]:
        """The filter's parameters on nbdkit's command line."""
        return [f"diskmodel-track-ns={self.track_seek_ns}", f"diskmodel-full-ns={self.full_seek_ns}",
                f"diskmodel-rpm={self.rpm}", f"diskmodel-rate={self.transfer_rate}",
                f"diskmodel-slack-ns={self.slack_ns}", f"diskmodel-queue-depth={self.queue_depth}",
                f"diskmodel-max-passes={self.max_passes}"]

    def describe(self) -> str:
        return (f"seeking disk model: average seek {self.average_seek_ns / 1e6:g} ms (track to track "
                f"{self.track_seek_ns / 1e6:g} ms, full stroke {self.full_seek_ns / 1e6:.2f} ms), {self.rpm} rpm, "
                f"{self.transfer_rate / MiB:.1f} MiB/s, queue depth {self.queue_depth}")


@dataclass(frozen=True)
class Arrival:
    """A request as it reached the disk: when (the filter's CLOCK_MONOTONIC, ns), where, how much,
    and how far past its deadline the host's own I/O for it ran (`behind_ns`, which the filter logs:
    the disk is free only then, which moves every later choice; 0 while the host keeps up)."""

    arrival_ns: int
    offset: int
    count: int
    behind_ns: int = 0


@dataclass(frozen=True)
class Served:
    """One request as the disk served it: its place in arrival order, when its service started,
    what it cost, how many waiting requests it was chosen among, and whether its age, not its place
    in the sweep, chose it."""

    index: int
    start_ns: int
    service: Service
    candidates: int
    aged: bool = False

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.service.total_ns


def schedule(model: DiskModel, requests: Sequence[Arrival], capacity: int, head: int = 0,
             free_at: int = 0) -> list[Served]:
    """The order the disk serves `requests` (in arrival order) in and when, from a disk whose head is
    at `head` and which is free from `free_at` (0: never used).

    The disk decides when it is free, or when the first request comes to an idle disk, among what
    has arrived by then: the first `queue_depth` waiting, in arrival order. A request that comes
    within the slack after the disk became free starts when it became free (the emulator's round
    trip, not idle time: see the filter's comment)."""
    waiting: list[int] = []
    passes: dict[int, int] = {}
    following = 0
    served = []
    while following < len(requests) or waiting:
        if not waiting:
            waiting.append(following)
            following += 1
        decided = max(free_at, requests[waiting[0]].arrival_ns)
        while following < len(requests) and requests[following].arrival_ns <= decided:
            waiting.append(following)
            following += 1
        candidates = [i for i in waiting if requests[i].arrival_ns <= decided][:model.queue_depth]
        chosen, aged = _choose(requests, candidates, head, passes, model.max_passes)
        waiting.remove(chosen)
        request = requests[chosen]
        start = free_at if free_at > 0 and decided - free_at <= model.slack_ns else decided
        service = model.service(head, request.offset, request.count, capacity)
        served.append(Served(chosen, start, service, len(candidates), aged))
        free_at = start + service.total_ns + request.behind_ns
        head = request.offset + request.count
    return served


def _choose(requests: Sequence[Arrival], candidates: list[int], head: int, passes: dict[int, int],
            max_passes: int) -> tuple[int, bool]:
    """The next candidate in the sweep (the lowest start at or past the head, else the lowest; the
    earlier on a tie), or the oldest once it has been passed over `max_passes` times; every older
    candidate than the one chosen is passed once more."""
    oldest = candidates[0]
    aged = passes.get(oldest, 0) >= max_passes
    chosen = oldest if aged else min(candidates, key=lambda i: (requests[i].offset < head, requests[i].offset, i))
    for index in candidates:
        if index < chosen:
            passes[index] = passes.get(index, 0) + 1
    passes.pop(chosen, None)
    return chosen, aged


def read_stats(text: str) -> dict[str, int]:
    """The filter's stats file (key=value lines) as numbers."""
    stats = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and value.strip().lstrip("-").isdigit():
            stats[key.strip()] = int(value)
    return stats
