"""What a phase run from N agents keeps of its requests' latencies in the run folder:
`<phase>.latencies.json`, each agent's exact latencies (protocol.pack_sorted) as a whole and by
the second each request ended in, per request kind, with the moment its loader began timing.
The report and `--json` merge them (analysis/latency.py) as one host's records would be: the
agents' requests together, never averages of their percentiles. Raw, kept as sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SUFFIX = ".latencies.json"


def file_name(op: str) -> str:
    return f"{op}{SUFFIX}"


def _kind(part: dict[str, Any]) -> dict[str, Any]:
    return {"lat_ns": part.get("lat_ns", ""), "seconds": part.get("seconds", [])}


def record(op: str, finished: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Every finished agent's latencies of phase `op`: a mixed phase's per kind, any other's
    under its own op."""
    agents = {}
    for label, phase in sorted(finished.items()):
        kinds = phase.get("kinds") or {op: phase}
        agents[label] = {"started_wall": float(phase["started_wall"]),
                         "kinds": {kind: _kind(part) for kind, part in sorted(kinds.items())}}
    return {"op": op, "agents": agents}


def write(folder: Path, op: str, finished: dict[str, dict[str, Any]]) -> str:
    """The phase's latencies written into `folder`; their file's name, for the phase's detail."""
    name = file_name(op)
    (folder / name).write_text(json.dumps(record(op, finished)) + "\n")
    return name
