"""The S3 phase spec, one owner: what each phase of the s3 workload asks the load generator
(native/s3load), from this host (workloads/s3.py) and from every agent (agent/runs.py) alike.

The objects (ObjectPlan): their sizes, their bytes and how they go up. Their bytes follow from
a seed: fresh for every run and, from agents, for every agent (`content_seed` of the run id and
the agent's label, sent to the agent with each job), so no two runs and no two agents write
the same data and a deduplicating target is not flattered. The first 16 bytes of an object
(its number and the phase's start) differ anyway; the seed makes the rest differ too.

Which objects a phase works on (`phase_spec`): PUT writes objects 0..n-1 (or new ones for a
duration); GET and the mixed phase read only what the PUT stored (a failed PUT is not a failed
GET); DELETE removes every object the PUT tried (a failed PUT may still have stored its
object). So a phase from N agents makes the same requests as from one host.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Protocol

from backupbench.engines.content import DataContent
from backupbench.engines.s3 import PhaseRun, PhaseSpec
from backupbench.engines.s3_records import attempted_keys, written_keys
from backupbench.errors import EngineError

# Phases that read what the PUT stored; the others (delete) work on what it tried.
READ_STORED = ("get", "mixed")
# Phases that may run for a duration instead of over a count of objects.
TIMED = ("put", "get", "mixed")


def content_seed(run_id: str, agent: str = "") -> int:
    """The seed of a run's object contents (of one agent's, given its label): fixed by the
    run id, so every phase (and a GET of random sizes) knows each object's size and bytes,
    and different for every run and every agent of it."""
    name = f"{run_id}/{agent}" if agent else run_id
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") >> 1


class AgentObjects(Protocol):
    """What an agent's s3-run request says of the objects (agent/protocol.S3Run, a later stage)."""

    @property
    def object_size(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def multipart_threshold(self) -> int: ...
    @property
    def part_size(self) -> int: ...
    @property
    def mix(self) -> Mapping[str, int]: ...

    def content(self) -> DataContent: ...


@dataclass(frozen=True)
class ObjectPlan:
    """What the objects are: sizes uniform in [size_low, size_high], their bytes, and how
    they go up (in parts over multipart_threshold, 0: never; locked, with a retention)."""

    size_low: int
    size_high: int
    content: DataContent
    seed: int
    multipart_threshold: int = 0
    part_size: int = 0
    lock_mode: str = ""  # "", governance or compliance
    retention_s: float = 0.0
    mix: Mapping[str, int] = field(default_factory=dict)  # the mixed phase's shares

    def loader_config(self) -> dict[str, Any]:
        """What every phase tells the load generator about the objects (native/s3load Config)."""
        content = self.content
        return {"seed": self.seed, "data": content.kind, "compress": content.compress, "dedupe": content.dedupe,
                "pattern": content.pattern, "object_size_max": self.size_high,
                "multipart_threshold": self.multipart_threshold, "part_size": self.part_size,
                "lock_mode": self.lock_mode.upper(), "retention_s": self.retention_s, "mix": dict(self.mix)}

    def agent_fields(self) -> dict[str, Any]:
        """The objects as an agent's s3-run request carries them (agent/protocol.S3Run, which
        takes fixed sizes and no lock); the agent makes the same ObjectPlan of them (`for_agent`)."""
        content = self.content
        return {"object_size": self.size_low, "seed": self.seed, "data": content.kind, "compress": content.compress,
                "dedupe": content.dedupe, "pattern": content.pattern, "multipart_threshold": self.multipart_threshold,
                "part_size": self.part_size, "mix": dict(self.mix)}

    @classmethod
    def for_agent(cls, fields: "AgentObjects") -> "ObjectPlan":
        """The plan of an agent's s3-run request (agent/protocol.S3Run), as agent_fields sent it."""
        return cls(fields.object_size, fields.object_size, fields.content(), fields.seed,
                   fields.multipart_threshold, fields.part_size, mix=dict(fields.mix))


@dataclass(frozen=True)
class PutKeys:
    """What the PUT did: the objects it stored, and every one it tried."""

    written: frozenset[int] = frozenset()
    attempted: frozenset[int] = frozenset()

    @classmethod
    def of(cls, run: PhaseRun) -> "PutKeys":
        return cls(frozenset(written_keys(run.records)), frozenset(attempted_keys(run.records)))


def key_set(numbers: Iterable[int]) -> tuple[int, tuple[int, ...]]:
    """The load generator's form of a set of object numbers: a count and the gaps in 0..count-1."""
    present = set(numbers)
    if not present:
        return 0, ()
    count = max(present) + 1
    return count, tuple(n for n in range(count) if n not in present)


def phase_spec(op: str, prefix: str, objects: ObjectPlan, concurrency: int, count: int, duration_s: float = 0.0,
               put: PutKeys = PutKeys()) -> PhaseSpec:
    """Phase `op` under `prefix`: a PUT of `count` objects (or for `duration_s`), any other
    phase over the objects `put` stored or tried; EngineError when there are none."""
    timed = duration_s if op in TIMED else 0.0
    if op == "put":
        return PhaseSpec("put", prefix, objects.size_low, concurrency, objects=count, duration_s=timed,
                         objects_config=objects.loader_config())
    total, skip = key_set(put.written if op in READ_STORED else put.attempted)
    if total == 0:
        raise EngineError(f"no object was written, so there is nothing to {op}")
    config = objects.loader_config()
    if op == "mixed":
        # New objects of the mixed phase come after every key the put phase may have stored.
        config["first_new_key"] = max(put.attempted) + 1
    return PhaseSpec(op, prefix, objects.size_low, concurrency, objects=total, skip=skip, duration_s=timed,
                     objects_config=config)
