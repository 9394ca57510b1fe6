"""The host side of the guest agent: what comes back on ttyS1, parsed.

The guest's init writes each command's output (stdout and stderr together, in order) to the
port, then `\\x1eLABDONE <nonce> <exit code> <cpu line before>|<cpu line after>\\n`.
`AgentStream` takes the bytes as they arrive and hands back finished text and, once seen, the
exit code. Pure: no I/O, tested on its own.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from backupbench.lab.initramfs import DONE, FAIL, MARK, READY


@dataclass
class Event:
    kind: str  # "ready", "done", "fail"
    value: str = ""  # exit code for "done", the reason for "fail"
    extra: str = ""  # for "done": the guest's `cpu` lines of /proc/stat before|after


class AgentStream:
    def __init__(self, nonce: str):
        self.nonce = nonce
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._markers = re.compile(
            re.escape(MARK) + rf"(?:({READY}|{DONE}) {re.escape(nonce)}(?: (-?\d+)(?: ([^\n]*))?)?|({FAIL}) ([^\n]*))\n")

    def feed(self, data: bytes) -> tuple[str, list[Event]]:
        """Output text that is certainly not part of a marker, and the markers seen."""
        self._pending += self._decoder.decode(data)
        text_parts: list[str] = []
        events: list[Event] = []
        while True:
            match = self._markers.search(self._pending)
            if not match:
                break
            text_parts.append(self._pending[:match.start()])
            kind, code, extra, fail, reason = match.groups()
            if fail:
                events.append(Event("fail", reason))
            elif kind == READY:
                events.append(Event("ready"))
            else:
                events.append(Event("done", code or "", extra or ""))
            self._pending = self._pending[match.end():]
        # Hold back from a record separator on: it may start a marker not complete yet.
        cut = self._pending.find(MARK)
        if cut == -1:
            text_parts.append(self._pending)
            self._pending = ""
        else:
            text_parts.append(self._pending[:cut])
            self._pending = self._pending[cut:]
            if len(self._pending) > 4096:  # a stray separator in the output, not a marker
                text_parts.append(self._pending)
                self._pending = ""
        return "".join(text_parts), events


def cpu_busy_fraction(before: str, after: str) -> float | None:
    """Busy share of all guest CPUs between two `cpu` lines of /proc/stat (None if unreadable)."""
    try:
        a = [int(x) for x in before.split()[1:9]]
        b = [int(x) for x in after.split()[1:9]]
    except ValueError:
        return None
    if len(a) < 5 or len(a) != len(b):
        return None
    delta = [y - x for x, y in zip(a, b)]
    total = sum(delta)  # user nice system idle iowait irq softirq steal
    idle = delta[3] + delta[4]
    return (total - idle) / total if total > 0 else None


def parse_cpu_pair(extra: str) -> float | None:
    before, _, after = extra.partition("|")
    return cpu_busy_fraction(before, after) if after else None
