"""The sampler: a background thread reading /proc every interval while a workload runs.

    with Sampler(interval=1.0, devices=stack.all_names or None, csv_path=run_dir / "monitor.csv") as s:
        run_the_workload()
    summary = s.summary

start() takes the priming snapshot in the caller's thread, so the baseline is in place
before the workload starts. Ticks are on the monotonic clock (start + k * interval); a
late tick is not made up with a burst. stop() takes a last sample covering the tail (if
at least 0.1 s has passed, so no figure comes from a sliver of time), closes the CSV and
returns the MonitorSummary. Nothing
raised while sampling escapes the thread: it lands in summary.errors.

A phase's sampler (`measure_after_s` given, runner/phases.py) counts in its summary only the
seconds the workload ran whole: a sample whose interval begins before one interval plus
`measure_after_s` (the workload starting partway through the first; fio's ramp_time) is left
out, and so is the tail sample stop() takes (the workload ended partway through it). The CSV
keeps every sample. A phase with fewer than WHOLE_SECONDS_ENOUGH whole seconds counts every
sample: its partial seconds hold too much of its work to leave out.
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

from backupbench.errors import InputError
from backupbench.monitor import sysfs
from backupbench.monitor.csvlog import CsvLog
from backupbench.monitor.procfs import Snapshot, read_snapshot
from backupbench.monitor.rates import Sample, compute_sample
from backupbench.hostfiles import HostFiles
from backupbench.monitor.summary import MonitorSummary, SummaryBuilder
from backupbench.monitor.thresholds import Thresholds

MIN_INTERVAL_S = 0.2
MAX_INTERVAL_S = 10.0
MIN_TAIL_S = 0.1
# A phase with fewer whole seconds than this counts every sample: in a phase of a few seconds
# the partial ones hold much of the work (a small-file phase's closing syncfs is its tail).
WHOLE_SECONDS_ENOUGH = 3
_MAX_NOTES = 50


def check_interval(interval: float) -> float:
    try:
        value = float(interval)
    except (TypeError, ValueError):
        raise InputError(f"sampling interval {interval!r} is not a number of seconds",
                         f"use a value from {MIN_INTERVAL_S:g} to {MAX_INTERVAL_S:g} s") from None
    if not MIN_INTERVAL_S <= value <= MAX_INTERVAL_S:
        raise InputError(f"sampling interval {value:g} s is outside {MIN_INTERVAL_S:g}-{MAX_INTERVAL_S:g} s",
                         f"use a value from {MIN_INTERVAL_S:g} to {MAX_INTERVAL_S:g} s, e.g. 1")
    return value


class Sampler:
    """Samples CPU, memory, load and block devices every `interval` seconds.

    devices: kernel names to sample (e.g. DeviceStack.all_names); None means every block
    device present at start (as iostat shows: no partitions; no ram*, no unattached
    loop). A named device that is absent gets empty CSV cells and a note; if it appears
    later it is sampled from then on. host/clock/wallclock are for tests.
    on_sample is called from the sampling thread with each Sample (errors it raises are
    recorded, not propagated).
    """

    def __init__(self, interval: float = 1.0, devices: Sequence[str] | None = None,
                 csv_path: Path | str | None = None, thresholds: Thresholds | None = None, *,
                 host: HostFiles | None = None, clock: Callable[[], float] = time.monotonic,
                 wallclock: Callable[[], float] = time.time,
                 on_sample: Callable[[Sample], None] | None = None, measure_after_s: float | None = None):
        self.interval = check_interval(interval)
        self.thresholds = thresholds or Thresholds()
        self.csv_path = Path(csv_path) if csv_path is not None else None
        self._requested = list(dict.fromkeys(devices)) if devices else None
        self._host = host or HostFiles()
        self._clock = clock
        self._wallclock = wallclock
        self._on_sample = on_sample
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._prev: Snapshot | None = None
        self._origin_t = 0.0
        self._builder: SummaryBuilder | None = None
        self._csv: CsvLog | None = None
        self._errors: dict[str, int] = {}
        self._present: set[str] = set()
        self._cpu_s = 0.0
        self._summary: MonitorSummary | None = None
        self._measure_after = measure_after_s
        self._phase_samples: list[Sample] = []   # every sample of a phase, in order (the fallback)
        self._left_out_count = 0
        self._taking_tail = False
        self.devices: list[str] = []
        self.latest: Sample | None = None

    # -- life cycle -----------------------------------------------------------------
    def start(self, background: bool = True) -> "Sampler":
        """Prime the counters now; with background=False no thread runs and the caller
        calls sample_once() itself (tests, or a caller with its own loop)."""
        if self._prev is not None or self._summary is not None:
            raise RuntimeError("a Sampler can be started once")
        cpu0 = time.thread_time()
        snap = read_snapshot(self._host, self._clock, self._wallclock)
        self._snapshot_errors(snap)
        self._prev, self._origin_t = snap, snap.t
        present = list(snap.disks or {})
        if self._requested is None:
            self.devices = sysfs.default_devices(self._host, present)
        else:
            self.devices = list(self._requested)
        self._present = {d for d in self.devices if d in present}
        self._builder = SummaryBuilder(self.devices, self.thresholds)
        for device in self.devices:
            if device not in self._present and snap.disks is not None:
                self._note(f"{device} is not present (no such device in /proc/diskstats)")
        if self.csv_path is not None:
            try:
                self._csv = CsvLog(self.csv_path, self.devices)
            except OSError as exc:
                self._error(f"cannot write the monitor CSV {self.csv_path}: {exc}")
        self._cpu_s += time.thread_time() - cpu0
        if background:
            self._thread = threading.Thread(target=self._run, name="backupbench-monitor", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> MonitorSummary:
        """Stop sampling and summarise; safe to call more than once or without start()."""
        if self._summary is not None:
            return self._summary
        if self._prev is None:
            self._summary = MonitorSummary(interval_s=self.interval, csv_path=self.csv_path,
                                           errors=["the sampler was never started"])
            return self._summary
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval + 10.0)
            if self._thread.is_alive():
                self._error("the sampling thread did not stop within its interval + 10 s")
        cpu0 = time.thread_time()
        if self._clock() - self._prev.t >= MIN_TAIL_S:
            self._taking_tail = True
            self._sample_safely()
        with self._lock:
            if self._csv is not None:
                self._csv.close()
            self._cpu_s += time.thread_time() - cpu0
            if self._builder.samples < WHOLE_SECONDS_ENOUGH and self._left_out_count:
                self._count_everything()
            self._summary = self._builder.build(
                interval_s=self.interval, errors=self._error_list(),
                csv_path=self.csv_path if self._csv is not None else None, sampler_cpu_s=self._cpu_s)
            self._summary.left_out = self._left_out_count
        return self._summary

    @property
    def running(self) -> bool:
        """True while the background thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def started_at(self) -> float | None:
        """The clock reading of the priming snapshot (a sample ends at started_at + elapsed_s)."""
        return self._origin_t if self._prev is not None else None

    @property
    def summary(self) -> MonitorSummary | None:
        """The summary once stop() has run (for use after a with-block)."""
        return self._summary

    def __enter__(self) -> "Sampler":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()   # the workload's exception, if any, goes on

    # -- sampling -------------------------------------------------------------------
    def sample_once(self) -> Sample | None:
        """Read the counters now and fold the interval since the last read in."""
        if self._prev is None:
            raise RuntimeError("start() the Sampler first")
        with self._lock:
            if self._summary is not None:
                return None
            snap = read_snapshot(self._host, self._clock, self._wallclock)
            self._snapshot_errors(snap)
            sample = compute_sample(self._prev, snap, self.devices, self._origin_t)
            self._track_devices(snap, sample)
            self._prev = snap
            if sample.interval_s <= 0:
                return None
            self._fold(sample)
            if self._csv is not None:
                try:
                    self._csv.write(sample)
                except OSError as exc:
                    self._error(f"writing the monitor CSV failed, CSV stopped: {exc}")
                    self._csv.close()
                    self._csv = None
            self.latest = sample
        if self._on_sample is not None:
            try:
                self._on_sample(sample)
            except Exception as exc:  # noqa: BLE001 - a viewer's bug must not stop sampling
                self._error(f"on_sample callback failed: {exc!r}")
        return sample

    def _fold(self, sample: Sample) -> None:
        """Into the summary, unless it is a phase's partial first or last second or its ramp."""
        if self._measure_after is None:
            self._builder.add(sample)
            return
        self._phase_samples.append(sample)
        begins = sample.elapsed_s - sample.interval_s
        # A small tolerance: the first counted sample begins on a tick, give or take the clock.
        if self._taking_tail or begins < self.interval + self._measure_after - 0.01:
            self._left_out_count += 1
            return
        self._builder.add(sample)

    def _count_everything(self) -> None:
        """A phase of a few seconds: its partial seconds hold much of its work (a small-file
        phase's closing syncfs lands in its tail), so every sample counts."""
        self._builder = SummaryBuilder(self.devices, self.thresholds)
        for sample in self._phase_samples:
            self._builder.add(sample)
        self._left_out_count = 0
        self._note("the phase was too short to leave out its partial first and last seconds: every sample counted")

    def _sample_safely(self) -> None:
        try:
            self.sample_once()
        except Exception as exc:  # noqa: BLE001 - recorded in the summary instead
            self._error(f"sampling failed: {exc!r}")

    def _run(self) -> None:
        cpu0 = time.thread_time()
        try:
            tick = 1
            while not self._stopping.is_set():
                wait = self._origin_t + tick * self.interval - self._clock()
                if wait > 0 and self._stopping.wait(wait):
                    break
                self._sample_safely()
                behind = math.floor((self._clock() - self._origin_t) / self.interval)
                tick = max(tick + 1, behind + 1)
        except BaseException as exc:  # noqa: BLE001 - the thread never raises
            self._error(f"the sampling thread stopped: {exc!r}")
        finally:
            with self._lock:
                self._cpu_s += time.thread_time() - cpu0

    # -- bookkeeping ----------------------------------------------------------------
    def _track_devices(self, snap: Snapshot, sample: Sample) -> None:
        if snap.disks is not None:
            now = {d for d in self.devices if d in snap.disks}
            for device in self.devices:
                if device in self._present and device not in now:
                    self._note(f"{device} vanished at {sample.elapsed_s:.1f} s")
                elif device in now and device not in self._present:
                    self._note(f"{device} appeared at {sample.elapsed_s:.1f} s")
            self._present = now
        for device in sample.reset:
            self._note(f"{device} counters were reset at {sample.elapsed_s:.1f} s (interval dropped)")

    def _note(self, text: str) -> None:
        notes = self._builder.notes if self._builder is not None else None
        if notes is not None and len(notes) < _MAX_NOTES:
            notes.append(text)

    def _snapshot_errors(self, snap: Snapshot) -> None:
        for message in snap.errors:
            self._error(message)

    def _error(self, message: str) -> None:
        self._errors[message] = self._errors.get(message, 0) + 1

    def _error_list(self) -> list[str]:
        return [m if n == 1 else f"{m} ({n} times)" for m, n in self._errors.items()]
