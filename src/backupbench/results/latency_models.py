"""The shape of a phase's `latency` in the run document (results/latency.py makes it,
analysis/latency.py reads it from the run folder): a document_models.Phase key, absent for a
phase that measures no latency, for a run whose raw files are not here, and in documents written
before it existed, so those still validate."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

Nanoseconds = Field(ge=0, description="ns")


class _Shape(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")


class Course(_Shape):
    sample: int = Field(ge=1, description="the sample (1 for a phase measured once)")
    seconds: list[tuple[int, Optional[int], Optional[float], Optional[float], Optional[float]]] = Field(
        description="[t_s, count, mean_ns, p50_ns, p99_ns] per second: t_s is the end of the 1 s window (1 = the "
                    "phase's first second, after its ramp); count the requests or I/Os that ended in it (null where "
                    "the source does not say); p50_ns and p99_ns null for fio, whose log keeps only each second's "
                    "mean")


class KindLatency(_Shape):
    kind: str = Field(min_length=1, description="read or write (fio); put, get, list or delete (S3)")
    count: int = Field(ge=0, description="requests or I/Os counted in the histogram")
    p50: float = Nanoseconds
    p90: float = Nanoseconds
    p99: float = Nanoseconds
    p99_9: float = Field(ge=0, description="p99.9, ns")
    histogram: list[tuple[int, int]] = Field(
        description="[upper_ns, count] per bucket, consecutive on a log scale (per_doubling to each power of two, at "
                    "most 64): a bucket holds the latencies above the previous bucket's upper_ns and at most its own; "
                    "the counts add up to count")
    per_doubling: Literal[1, 2, 4, 8] = Field(description="buckets per power of two")
    over_time: list[Course] = Field(description="one course per sample; empty where the run kept none (fio runs "
                                                "stored before the 1 s latency log)")


class PhaseLatency(_Shape):
    """Total latency per kind of request: a histogram with p50/p90/p99/p99.9 and its course second
    by second (docs/results.md). fio: from its json+ bins, every job's, host's and sample's added
    bucket by bucket (its own percentiles for one host and one sample); S3: every request's latency."""

    unit: Literal["ns"]
    source: Literal["fio", "s3"]
    of: str = Field(min_length=1, description="what was counted, in words")
    samples: int = Field(ge=1, description="samples whose requests the histogram holds together")
    hosts: int = Field(ge=1, description="fio servers or S3 agents whose requests it holds together")
    over_time_of: str = Field(min_length=1, description="what each second of over_time is, in words")
    kinds: list[KindLatency]
