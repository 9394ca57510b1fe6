#!/usr/bin/env python3
"""Benchmark: an agent's answer time to a controller while others flood it with idle connections.

Starts `backupbench agent` on 127.0.0.1 (TLS with a self-signed certificate, as
bench/agent_overhead.py does; --plain: plain HTTP), then, --rounds times over: --requests hello
requests with the token, one after another as a controller makes them (each a new connection,
TLS handshake included), first with nothing else connected (the reference), then the same with
--idle connections held open that never send a byte (a flooder reopens each one the agent closes
at its deadline, so the flood stays at --idle all along). Prints each case's median and p10-p90
over all its requests, and the flood's median and p90 as ratios of the reference's measured in
the same run. Any request not answered 200 fails the benchmark (exit 1): answering is the point. The ratio
line is the median over rounds of each round's flood/reference medians.

    .venv/bin/python bench/agent_flood.py [--requests 200] [--idle 200] [--rounds 3] [--plain]

Goal: the flood's median within 2x of the reference (before issue 23's fix, 200 idle
connections made the agent refuse requests with the token for ~12 s). Network: 127.0.0.1 only.
The agent is stopped and every socket closed on every way out; the temp folder is removed.
"""

from __future__ import annotations

import argparse
import select
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from agent_overhead import SETTLE_S, start_agent, stop_agent  # noqa: E402
from _common import ratio_line, spread  # noqa: E402
from backupbench.agent.client import AgentClient  # noqa: E402
from backupbench.stats import nearest_rank  # noqa: E402

GOAL_RATIO = 2.0


def percentile(values: list[float], p: float) -> float:
    return nearest_rank(sorted(values), p)


class Flood:
    """`count` idle connections to `address`, kept at that count until stopped."""

    def __init__(self, address: str, count: int):
        host, port = address.rsplit(":", 1)
        self.target, self.count = (host, int(port)), count
        self.held: list[socket.socket] = []
        self.reopened = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep, daemon=True)

    def __enter__(self) -> "Flood":
        self.held = [socket.create_connection(self.target, timeout=10) for _ in range(self.count)]
        self._thread.start()
        return self

    def _keep(self) -> None:
        while not self._stop.is_set():
            closed, _, _ = select.select(self.held, [], [], 0.2)
            for sock in closed:   # readable: the agent closed it (its deadline); open another
                sock.close()
                self.held[self.held.index(sock)] = socket.create_connection(self.target, timeout=10)
                self.reopened += 1

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        for sock in self.held:
            sock.close()


def timed(client: AgentClient, count: int) -> list[float]:
    seconds = []
    for _ in range(count):
        began = time.perf_counter()
        status, _ = client.call("hello", version="bench")
        seconds.append(time.perf_counter() - began)
        if status != 200:
            raise SystemExit(f"a request with the token was answered {status}")
    return seconds


def summary(name: str, seconds: list[float]) -> str:
    ms = [s * 1000 for s in seconds]
    return (f"{name}: median {percentile(ms, 50):.2f} ms, p10-p90 {percentile(ms, 10):.2f}-{percentile(ms, 90):.2f} ms "
            f"({len(ms)} requests)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--plain", action="store_true", help="plain HTTP instead of TLS")
    args = parser.parse_args()
    quiet, flooded, reopened, ratios = [], [], 0, []
    with tempfile.TemporaryDirectory(prefix="bb-agent-flood-") as tmp:
        proc, address, token, trust = start_agent(Path(tmp), args.plain)
        try:
            client = AgentClient(address, token, timeout=60, trust=trust)
            time.sleep(SETTLE_S)
            for _ in range(args.rounds):   # alternated, so a drift of the machine favours neither
                alone = timed(client, args.requests)
                with Flood(address, args.idle) as flood:
                    crowded = timed(client, args.requests)
                    reopened += flood.reopened
                quiet, flooded = quiet + alone, flooded + crowded
                ratios.append(percentile(crowded, 50) / percentile(alone, 50))
        finally:
            stop_agent(proc)
    ratio = percentile(flooded, 50) / percentile(quiet, 50)
    print(f"agent over {'plain HTTP' if args.plain else 'TLS'}, hello requests with the token, one at a time:")
    print("  " + summary("no flood (reference)", quiet))
    print("  " + summary(f"{args.idle} idle connections held", flooded) + f"; {reopened} reopened after the agent "
          "closed them at their deadline")
    print(f"  over all requests, flood / reference: median {ratio:.2f}x, "
          f"p90 {percentile(flooded, 90) / percentile(quiet, 90):.2f}x")
    middle = spread(ratios, "rounds").median
    print(ratio_line("answer time with the flood / without, median per round", ratios, f"< {GOAL_RATIO:g}",
                     "ok" if middle < GOAL_RATIO else "OVER", what="rounds", digits=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
