"""The agent's host monitor: the project's 1 s Sampler, its samples kept for the controller.

The sampler runs for the agent's whole life, so a controller that asks "since N" gets every
interval in between, whenever it asks (up to KEEP samples back: an hour). Samples are turned
into their wire form once, as they arrive, so a request only slices a list.

Each answer carries the feed's `instance`, a random id made when the agent starts: sequence
numbers begin at 1 again in a restarted agent, and a controller that asks "since N" after a
restart would otherwise skip its first N samples without knowing.

Each answer also names the host's whole disks (`disks`): the sampled devices built on no other
(no sysfs slaves), loop and zram devices left out. Only this host can tell, and a controller
adding up the host's disk throughput must not count an LVM volume and the disk under it twice.
And the disks under the agent's root (`target_disks`: the members of its device stack,
monitor/stack.py, that are sampled; `target`: that stack in one line, or why there is none):
the workload runs there, so its timeline sums those and not the host's other disks. A root
on no block device (tmpfs, NFS) has none: `target` says why and the whole disks stand in.
"""

from __future__ import annotations

import secrets
import threading
from collections import deque
from pathlib import Path
from typing import Any

from backupbench.agent.protocol import MAX_SAMPLES_PER_ANSWER, sample_dict
from backupbench.hostfiles import HostFiles
from backupbench.monitor import sysfs
from backupbench.monitor.stack import device_stack
from backupbench.monitor.rates import Sample
from backupbench.monitor.sampler import Sampler

KEEP = 3600
INTERVAL_S = 1.0
# Devices over files or memory: their I/O lands on (or never reaches) a real disk.
NOT_DISKS = ("loop", "zram")


def whole_disks(host: HostFiles, devices: list[str]) -> list[str]:
    """The devices at the bottom of every stack; if none is a real disk (a host testing on loop
    devices only), the bottom ones whatever they are."""
    bottom = [name for name in devices if not sysfs.slaves(host, name)]
    return [name for name in bottom if not name.startswith(NOT_DISKS)] or bottom


def target_disks(root: Path, host: HostFiles, devices: list[str]) -> tuple[list[str], str]:
    """The sampled member disks of the device stack under `root`, and that stack in one line
    (or why it has none: then no disks)."""
    stack = device_stack(root, host)
    found = [name for name in stack.members if name in devices]
    if not found:
        why = stack.reason or "its devices are not sampled"
        return [], f"root {root} is on no sampled disk: {why}"
    return found, stack.describe()


class SampleFeed:
    def __init__(self, interval: float = INTERVAL_S, host: HostFiles | None = None, root: Path | None = None):
        self._lock = threading.Lock()
        self._samples: deque[dict[str, Any]] = deque(maxlen=KEEP)
        self._seq = 0
        self._host = host or HostFiles()
        self._sampler = Sampler(interval, on_sample=self._add, host=self._host)
        self._disks: list[str] = []
        self._root = root
        self._target_disks: list[str] = []
        self._target = ""
        self.instance = secrets.token_hex(8)

    def start(self) -> "SampleFeed":
        self._sampler.start()
        # The sampler's devices are fixed at its start: its disks are worked out once.
        self._disks = whole_disks(self._host, self.devices)
        if self._root is not None:
            self._target_disks, self._target = target_disks(self._root, self._host, self.devices)
        return self

    def stop(self) -> None:
        self._sampler.stop()

    @property
    def devices(self) -> list[str]:
        return list(self._sampler.devices)

    @property
    def disks(self) -> list[str]:
        return list(self._disks)

    def _add(self, sample: Sample) -> None:
        with self._lock:
            self._seq += 1
            self._samples.append(sample_dict(self._seq, sample))

    def since(self, seq: int) -> dict[str, Any]:
        """Samples with a sequence number above `seq`, oldest first, at most one answer's worth;
        `last` is the newest number, `dropped` how many the controller missed (too old), `instance`
        this feed's id."""
        with self._lock:
            held = list(self._samples)
            last = self._seq
        first_held = held[0]["seq"] if held else last + 1
        dropped = max(0, first_held - seq - 1) if seq < last else 0
        new = [s for s in held if s["seq"] > seq][:MAX_SAMPLES_PER_ANSWER]
        return {"samples": new, "last": last, "dropped": dropped, "devices": self.devices, "disks": self.disks,
                "target_disks": list(self._target_disks), "target": self._target,
                "interval_s": self._sampler.interval, "instance": self.instance}
