"""Per-operation records of an S3 phase, and the figures computed from them (pure).

The load generator writes one record per request to `<phase>.ops.csv.gz` in the run folder:

    op,key,worker,start_ns,first_byte_ns,end_ns,bytes,status,error,retries,retry_error

Times are nanoseconds since the phase started (monotonic clock); first_byte_ns is when the
first byte of the response (its status line) arrived, -1 when none did; bytes is what was
transferred for a successful request; status is the HTTP status (0: no response); error is
empty on success, else its kind: an S3 error code (SlowDown, NoSuchKey, ...) or a transport
kind (timeout, connection-refused, connection-reset, eof, tls, size-mismatch, canceled, ...);
retries is how many times the request was sent again after a transient answer (429, 500, 502,
503, 504: native/s3load/retry.go) and retry_error the answer that made the last retry (SlowDown).
Records written before retries were counted have no such columns: 0 and "".

Figures of a phase (plain floats; the phase runs from 0 to the end of its last request):
ops and errors (requests that succeeded / failed, after any retries), retried (requests sent
again at least once, whether they then succeeded or failed) and retries (the resends), bytes (of successful requests),
runtime (s), effective_bw (bytes/s), objects_per_s, lat_p50/p90/p99_ns (end - start of
successful requests), and for GET ttfb_p50/p99_ns (first byte - start). Percentiles are
nearest-rank: the smallest value with at least p% of the values at or below it.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from backupbench.stats import nearest_rank
from backupbench.errors import EngineError

COLUMNS = ("op", "key", "worker", "start_ns", "first_byte_ns", "end_ns", "bytes", "status", "error", "retries",
           "retry_error")
UNRETRIED_COLUMNS = COLUMNS[:9]  # a loader from before retries were counted


@dataclass(frozen=True, slots=True)
class OpRecord:
    op: str
    key: int
    worker: int
    start_ns: int
    first_byte_ns: int
    end_ns: int
    bytes: int
    status: int
    error: str = ""
    retries: int = 0
    retry_error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


def records_file(phase: str) -> str:
    return f"{phase}.ops.csv.gz"


def parse_records(lines: Iterable[str]) -> list[OpRecord]:
    reader = csv.reader(lines)
    header = next(reader, None)
    if header is None or tuple(header) not in (COLUMNS, UNRETRIED_COLUMNS):
        raise EngineError(f"unexpected S3 record columns: {header!r}")
    width = len(header)
    records = []
    for row in reader:
        if len(row) != width:
            raise EngineError(f"malformed S3 record: {row!r}")
        op, key, worker, start, first, end, size, status, error, *retried = row
        retries, retry_error = (int(retried[0]), retried[1]) if retried else (0, "")
        records.append(OpRecord(op, int(key), int(worker), int(start), int(first), int(end), int(size),
                                int(status), error, retries, retry_error))
    return records


def read_records(path: Path) -> list[OpRecord]:
    try:
        with gzip.open(path, "rt", newline="") as handle:
            return parse_records(handle)
    except (OSError, EOFError, ValueError) as exc:
        raise EngineError(f"cannot read the S3 records {path}: {exc}") from exc


def format_records(records: Iterable[OpRecord]) -> str:
    """The CSV text of records (tests and tools that write records themselves)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for r in records:
        writer.writerow((r.op, r.key, r.worker, r.start_ns, r.first_byte_ns, r.end_ns, r.bytes, r.status, r.error,
                         r.retries, r.retry_error))
    return out.getvalue()


def errors_by_kind(records: Iterable[OpRecord]) -> dict[str, int]:
    counts = Counter(r.error for r in records if r.error)
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def retried_by_kind(records: Iterable[OpRecord]) -> dict[str, int]:
    """Requests sent again, by the answer that made the last retry (SlowDown: 12)."""
    counts = Counter(r.retry_error or "retried" for r in records if r.retries)
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def phase_figures(records: list[OpRecord], op: str) -> dict[str, float]:
    ok = [r for r in records if r.ok]
    runtime_s = max((r.end_ns for r in records), default=0) / 1e9
    moved = sum(r.bytes for r in ok)
    figures = {
        "ops": float(len(ok)),
        "errors": float(len(records) - len(ok)),
        "retried": float(sum(1 for r in records if r.retries)),
        "retries": float(sum(r.retries for r in records)),
        "bytes": float(moved),
        "runtime": runtime_s,
        "effective_bw": moved / runtime_s if runtime_s > 0 else 0.0,
        "objects_per_s": len(ok) / runtime_s if runtime_s > 0 else 0.0,
    }
    latencies = sorted(r.end_ns - r.start_ns for r in ok)
    for p in (50, 90, 99):
        figures[f"lat_p{p}_ns"] = nearest_rank(latencies, p)
    if op == "get":
        ttfb = sorted(r.first_byte_ns - r.start_ns for r in ok if r.first_byte_ns >= 0)
        figures["ttfb_p50_ns"] = nearest_rank(ttfb, 50)
        figures["ttfb_p99_ns"] = nearest_rank(ttfb, 99)
    return figures


def multipart_objects(records: Iterable[OpRecord], threshold: int) -> int:
    """How many objects went up as multipart uploads: the loader splits a PUT over `threshold`
    bytes (native/s3load: 0 never splits)."""
    return sum(1 for r in records if r.op == "put" and r.ok and threshold > 0 and r.bytes > threshold)


def written_keys(records: Iterable[OpRecord]) -> set[int]:
    """Object numbers a PUT phase wrote successfully."""
    return {r.key for r in records if r.ok}


def attempted_keys(records: Iterable[OpRecord]) -> set[int]:
    """Object numbers a phase tried, successfully or not (a failed PUT may still have stored it)."""
    return {r.key for r in records}


def kind_figures(kind: str, part: dict[str, float], runtime: float) -> dict[str, float]:
    """One request kind's share of a mixed phase, named with its op (put_ops, get_effective_bw,
    list_lat_p99_ns, ...): its figures, with rates over `runtime`, the whole phase's (shares of
    one wall clock). The one form of a mixed phase's per-kind figures, from one host
    (mixed_figures) and merged from N agents (runner/agents_merge.py)."""
    rates = {"effective_bw": part["bytes"] / runtime if runtime > 0 else 0.0,
             "objects_per_s": part["ops"] / runtime if runtime > 0 else 0.0}
    return {f"{kind}_{name}": value for name, value in {**part, **rates}.items() if name != "runtime"}


def of_kind(figures: dict[str, float], kind: str) -> dict[str, float]:
    """kind_figures read back: a mixed phase's 'put_lat_p50_ns' as 'lat_p50_ns' ({} if none)."""
    return {name[len(kind) + 1:]: value for name, value in figures.items() if name.startswith(f"{kind}_")}


def mixed_figures(records: list[OpRecord]) -> dict[str, float]:
    """A mixed phase: the figures of all its requests, then each kind's (kind_figures)."""
    figures = phase_figures(records, "mixed")
    for kind in sorted({r.op for r in records}):
        figures.update(kind_figures(kind, phase_figures([r for r in records if r.op == kind], kind),
                                    figures["runtime"]))
    return figures
