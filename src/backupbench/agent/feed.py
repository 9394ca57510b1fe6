"""The agent's host monitor: the project's 1 s Sampler, its samples kept for the controller.

The sampler runs for the agent's whole life, so a controller that asks "since N" gets every
interval in between, whenever it asks (up to KEEP samples back: an hour). Samples are turned
into their wire form once, as they arrive, so a request only slices a list.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from backupbench.agent.protocol import MAX_SAMPLES_PER_ANSWER, sample_dict
from backupbench.monitor.rates import Sample
from backupbench.monitor.sampler import Sampler

KEEP = 3600
INTERVAL_S = 1.0


class SampleFeed:
    def __init__(self, interval: float = INTERVAL_S):
        self._lock = threading.Lock()
        self._samples: deque[dict[str, Any]] = deque(maxlen=KEEP)
        self._seq = 0
        self._sampler = Sampler(interval, on_sample=self._add)

    def start(self) -> "SampleFeed":
        self._sampler.start()
        return self

    def stop(self) -> None:
        self._sampler.stop()

    @property
    def devices(self) -> list[str]:
        return list(self._sampler.devices)

    def _add(self, sample: Sample) -> None:
        with self._lock:
            self._seq += 1
            self._samples.append(sample_dict(self._seq, sample))

    def since(self, seq: int) -> dict[str, Any]:
        """Samples with a sequence number above `seq`, oldest first, at most one answer's worth;
        `last` is the newest number, `dropped` how many the controller missed (too old)."""
        with self._lock:
            held = list(self._samples)
            last = self._seq
        first_held = held[0]["seq"] if held else last + 1
        dropped = max(0, first_held - seq - 1) if seq < last else 0
        new = [s for s in held if s["seq"] > seq][:MAX_SAMPLES_PER_ANSWER]
        return {"samples": new, "last": last, "dropped": dropped, "devices": self.devices,
                "interval_s": self._sampler.interval}
