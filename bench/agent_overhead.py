#!/usr/bin/env python3
"""Benchmark: the agent's own CPU while it serves its monitor samples once a second.

Starts `backupbench agent` on 127.0.0.1 (a free port, a fresh token file and root in a temp
folder, TLS with a self-signed certificate made by the openssl command `hosts agent-unit`
prints; --plain: --insecure-plain-http), lets it settle, then for --seconds (default 30) asks it for the samples since the
last one once a second, as a controller does, and reads the agent process's CPU time
(utime + stime, /proc/PID/stat) at the start and after every --window seconds. Prints the
agent's CPU as a percentage of one core: its 1 s sampler, its HTTP server, its answers; the
median of the windows with their min-max. Goal: < 1 %. Exits 0 when it measured.

    .venv/bin/python bench/agent_overhead.py [--seconds 30] [--window 10] [--plain]

The agent is stopped (SIGTERM, then SIGKILL) and the temp folder removed on every way out.
"""

from __future__ import annotations

import argparse
import os
import secrets
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from _common import ratio_line, spread  # noqa: E402
from backupbench.agent.client import AgentClient  # noqa: E402
from backupbench.agent.tls import MAKE_CERT, Trust, cert_fingerprint  # noqa: E402

GOAL_PCT = 1.0
BACKUPBENCH = str(Path(sys.executable).parent / "backupbench")
SETTLE_S = 3.0


def cpu_seconds(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rfind(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_agent(folder: Path, plain: bool = False) -> tuple[subprocess.Popen, str, str, Trust]:
    """The agent (TLS unless `plain`), its address, its token, and how a client trusts it."""
    token = secrets.token_hex(32)
    token_file = folder / "token"
    token_file.write_text(token)
    os.chmod(token_file, 0o600)
    (folder / "root").mkdir()
    transport, trust = ["--insecure-plain-http"], Trust.choose(plain=True)
    if not plain:
        cert, key = folder / "agent.pem", folder / "agent.key"
        subprocess.run(MAKE_CERT.format(address="127.0.0.1", key=key, cert=cert).split(), check=True,
                       capture_output=True, timeout=60)
        transport, trust = ["--tls-cert", str(cert), "--tls-key", str(key)], Trust.choose(
            fingerprints=[cert_fingerprint(cert)])
    proc = subprocess.Popen([BACKUPBENCH, "agent", "--listen", "127.0.0.1:0", "--token-file", str(token_file),
                             "--root", str(folder / "root"), *transport], stdout=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    ready, _, _ = select.select([proc.stdout], [], [], 30)
    line = proc.stdout.readline().decode() if ready else ""
    if "listening on" not in line:
        stop_agent(proc)
        raise SystemExit(f"the agent did not start: {line!r}")
    return proc, line.split("listening on ")[1].split()[0], token, trust


def stop_agent(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def measure(client: AgentClient, pid: int, seconds: int, window: int) -> tuple[list[float], int]:
    """The agent's CPU in % of one core over each window of `window` seconds, and the samples served."""
    since, got, percents = 0, 0, []
    t0 = time.monotonic()
    cpu_start, t_start = cpu_seconds(pid), t0
    for tick in range(1, seconds + 1):
        answer = client.monitor(since)
        got += len(answer["samples"])
        since = answer["last"]
        time.sleep(max(0.0, t0 + tick - time.monotonic()))
        if tick % window == 0 or tick == seconds:
            cpu_end, t_end = cpu_seconds(pid), time.monotonic()
            percents.append((cpu_end - cpu_start) / (t_end - t_start) * 100.0)
            cpu_start, t_start = cpu_end, t_end
    return percents, got


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--plain", action="store_true", help="plain HTTP instead of TLS")
    parser.add_argument("--window", type=int, default=10, help="seconds per figure (the CPU clock ticks in 10 ms)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bb-agent-bench-") as tmp:
        proc, address, token, trust = start_agent(Path(tmp), args.plain)
        try:
            client = AgentClient(address, token, trust=trust)
            time.sleep(SETTLE_S)   # past the imports and the first samples
            percents, got = measure(client, proc.pid, args.seconds, max(1, args.window))
        finally:
            stop_agent(proc)
    verdict = "ok" if spread(percents).median < GOAL_PCT else "OVER"
    print(f"agent serving monitor samples once a second over {'plain HTTP' if args.plain else 'TLS'} for {args.seconds} s ({got} samples served)")
    print(ratio_line("agent CPU / wall time, % of one core", percents, f"< {GOAL_PCT:g}", verdict,
                     what="windows", digits=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
