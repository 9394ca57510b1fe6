"""fio job files: the exact text handed to fio, also printed by `export-fio`.

A job file (not a long command line) is what we store and export, so anyone can re-run a
figure with plain `fio FILE`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

from backupbench import __version__
from backupbench.engines.content import DataContent
from backupbench.paths import Syntax, for_program
from backupbench.units import fio_size


@dataclass(frozen=True)
class FioJob:
    name: str
    filename: Path
    rw: str
    block_size: int
    region_size: int | None  # None: the whole file or device, as fio takes it without size=
    iodepth: int = 1
    numjobs: int = 1
    ioengine: str = "libaio"
    direct: bool = True
    runtime_s: float | None = None
    rwmixwrite: int | None = None
    comment: str = ""
    # Set when several jobs share one file (export-fio): each waits for the one before.
    stonewall: bool = False
    # Set on the last job of an exported suite: fio removes the test file when it ends.
    unlink: bool = False
    fallocate: str | None = None
    # What the written bytes are (reads carry the options too: harmless, and the file says it).
    # None: fio's own buffers (random, filled once), for a raw device speed (runner/faulted.py).
    content: DataContent | None = DataContent()
    # fio's --readonly, a command-line switch (no job-file key in fio 3.33): fio refuses to write.
    readonly: bool = False
    # fsync the file once its last block is written, so the data is on the disks when fio ends.
    end_fsync: bool = False
    # Time-based jobs only: seconds run before fio starts counting (fio's ramp_time), and fio's
    # steady-state stop ('iops_slope:0.3%') judged over a rolling window of that many seconds.
    ramp_s: float = 0.0
    steady_state: str | None = None
    steady_state_window_s: float | None = None
    # fio's own 1 s averages of total latency and IOPS, written beside its JSON as
    # <log_name>_lat.<n>.log (and _iops, _clat, _slat); a run's jobs have them, an exported suite
    # not. The name is the job's, or one per host where fio's client would give two the same.
    log_name: str | None = None

    @property
    def pattern(self) -> str:
        """Short form for tables, e.g. 'randrw w67% qd4 x2'; the job file has every option."""
        mix = f" w{self.rwmixwrite}%" if self.rwmixwrite is not None else ""
        jobs = f" x{self.numjobs}" if self.numjobs > 1 else ""
        return f"{self.rw}{mix} qd{self.iodepth}{jobs}"

    def options(self) -> list[tuple[str, str]]:
        opts: list[tuple[str, str]] = [
            ("filename", for_program(self.filename, Syntax.FIO_JOB)),
            ("ioengine", self.ioengine),
            ("direct", "1" if self.direct else "0"),
            ("bs", fio_size(self.block_size)),
            *([("size", fio_size(self.region_size))] if self.region_size is not None else []),
            ("rw", self.rw),
        ]
        if self.fallocate is not None:
            opts.append(("fallocate", self.fallocate))
        if self.rwmixwrite is not None:
            opts.append(("rwmixwrite", str(self.rwmixwrite)))
        opts.append(("iodepth", str(self.iodepth)))
        opts += self.content.fio_options() if self.content is not None else []
        # Jobs as threads of one fio process: should backupbench die, the one SIGKILL the
        # kernel sends that process (process.py) ends every job; forked jobs would go on writing.
        opts.append(("thread", "1"))
        if self.numjobs > 1:
            # Without this every job would start at offset 0 and rewrite the same blocks.
            assert self.region_size is not None, "jobs sharing a file each need a region of their own"
            opts += [("numjobs", str(self.numjobs)), ("offset_increment", fio_size(self.region_size))]
        if self.runtime_s is not None:
            opts += [("runtime", fio_duration(self.runtime_s)), ("time_based", "1")]
            opts += self._warm_up_options()
        # Percentiles of total latency (slat + clat): what the application waits for.
        opts += [("lat_percentiles", "1"), ("clat_percentiles", "0")]
        opts.append(("group_reporting", "1"))
        opts += self._log_options()
        if self.end_fsync:
            opts.append(("end_fsync", "1"))
        if self.stonewall:
            opts.append(("stonewall", "1"))
        if self.readonly:
            # A read-only job reads what is there: it makes no file (fio's --readonly, which the
            # job file cannot say, refuses writes) and never removes one.
            opts.append(("allow_file_create", "0"))
        elif self.unlink:
            opts.append(("unlink", "1"))
        return opts

    def _warm_up_options(self) -> list[tuple[str, str]]:
        """ramp_time: fio runs that long before it counts anything (figures and steady-state
        window alike: its window starts after the ramp, so steadystate_ramp_time stays 0)."""
        opts = [("ramp_time", fio_duration(self.ramp_s))] if self.ramp_s > 0 else []
        if self.steady_state is not None:
            window = self.steady_state_window_s or 0.0
            opts += [("steadystate", self.steady_state), ("steadystate_duration", fio_duration(window))]
        return opts

    def _log_options(self) -> list[tuple[str, str]]:
        """Per-second averages, not a line per I/O: a restore at 20,000 IOPS would log 1.2 million
        lines a minute, held in fio's memory until the job ends. fio 3.33's histogram log would give
        each second's percentiles, but of completion latency only (and only with clat_percentiles=1),
        not the total latency every other figure counts (report/latency_charts.py)."""
        if self.log_name is None:
            return []
        return [("write_lat_log", self.log_name), ("write_iops_log", self.log_name), ("log_avg_msec", "1000")]

    def logged(self, name: str | None = None) -> "FioJob":
        """This job with its latency logs, named `name` (the job's by default): a run's jobs;
        an exported suite goes without."""
        return replace(self, log_name=name or self.name)

    @property
    def longest_s(self) -> float | None:
        """The most a time-based job runs: its ramp and its runtime; None for a size-based one."""
        return None if self.runtime_s is None else self.runtime_s + (self.ramp_s if self.ramp_s > 0 else 0.0)

    def text(self) -> str:
        header = [f"; backupbench {__version__}: {self.name}"]
        if self.comment:
            header.append(f"; {self.comment}")
        if self.readonly:
            header.append("; read only: run it as fio --readonly FILE")
        body = [f"[{self.name}]"] + [f"{key}={value}" for key, value in self.options()]
        return "\n".join(header + body) + "\n"

    def write(self, path: Path) -> Path:
        path.write_text(self.text())
        return path


def fio_duration(seconds: float) -> str:
    # fio reads whole numbers only; fall back to milliseconds for fractions. Never 0: fio's
    # runtime=0 means "no limit", and a time_based job would then run for ever.
    if seconds == int(seconds) and seconds >= 1:
        return f"{int(seconds)}s"
    return f"{max(1, math.ceil(seconds * 1000))}ms"


def command(job_file: Path, output_json: Path, readonly: bool = False) -> list[str]:
    """fio's command line; the ETA goes to stdout, one line a second, for progress. json+: each
    direction's latency histogram (`bins`), which the report draws and samples add up in."""
    return [
        "fio", *(["--readonly"] if readonly else []), "--output-format=json+", f"--output={for_program(output_json)}",
        "--eta=always", "--eta-newline=1", "--eta-interval=1s", for_program(job_file),
    ]
