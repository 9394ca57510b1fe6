"""S3 Object Lock in the s3 workload: the refusals, the lock-check phase's figures, and what
cleanup says about objects it may not remove.

A governance lock can be lifted by whoever holds s3:BypassGovernanceRetention, so cleanup
removes those versions with `x-amz-bypass-governance-retention: true`. A compliance lock can
be lifted by nobody, root included, until the retain-until date: those versions, and the
bucket that holds them, are left, listed in the run folder, and the user is told so before
the run writes anything.
"""

from __future__ import annotations

import csv
import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from backupbench import units
from backupbench.engines.s3 import Removal
from backupbench.errors import RefusedError
from backupbench.workloads.s3_options import S3Options

log = logging.getLogger("backupbench.s3")
CHECKED_OBJECTS = 5
RETAINED_FILE = "retained.csv"


def refuse_unlocked_bucket(bucket: str, endpoint: str) -> RefusedError:
    return RefusedError(f"bucket {bucket} at {endpoint} has no object lock, so locked objects cannot be written to it",
                        "use a bucket created with object lock enabled, or a new bucket name with --create-bucket")


def warn_before(options: S3Options, bucket: str) -> None:
    """Said before anything is written: what a compliance run leaves behind."""
    if options.object_lock != "compliance":
        return
    log.warning("compliance lock: nobody can delete this run's objects until %s after each is written (about %s); "
                "they and bucket %s will be left", units.format_duration(options.retention or 0),
                time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(time.time() + (options.retention or 0))), bucket)


def checked_keys(written: set[int], count: int = CHECKED_OBJECTS) -> list[int]:
    """A few of the objects written, spread over the run (first, last and between)."""
    ordered = sorted(written)
    if len(ordered) <= count:
        return ordered
    step = (len(ordered) - 1) / (count - 1)
    return sorted({ordered[round(i * step)] for i in range(count)})


def check_figures(event: dict[str, Any], seconds: float) -> dict[str, float]:
    """The lock-check phase's figures: each check 1 (held) or 0 (broken), and as S3 rows have."""
    checked = int(event.get("checked", 0))
    held = {name: int(event.get(name, 0)) for name in ("lock_applied", "delete_refused", "overwrite_kept")}
    failures = sum(checked - count for count in held.values())
    return {
        "objects_checked": float(checked),
        "lock_applied": float(checked > 0 and held["lock_applied"] == checked),
        "lock_delete_refused": float(checked > 0 and held["delete_refused"] == checked),
        "lock_overwrite_kept": float(checked > 0 and held["overwrite_kept"] == checked),
        "ops": float(checked * 3 - failures), "errors": float(failures), "bytes": 0.0,
        "runtime": seconds, "effective_bw": 0.0, "objects_per_s": checked / seconds if seconds > 0 else 0.0,
    }


def lock_held(figures: dict[str, float]) -> bool:
    """The lock held: applied, its DELETE refused and the locked version kept, on every object checked."""
    return all(figures.get(name) == 1 for name in ("lock_applied", "lock_delete_refused", "lock_overwrite_kept"))


# A failed check, in words, when the loader's notes are not at hand (a run stored without them).
BROKEN = {"lock_applied": "the lock was not applied", "lock_delete_refused": "a DELETE of the version was allowed",
          "lock_overwrite_kept": "the locked version did not survive an overwrite and its DELETE"}


def failure_reasons(figures: dict[str, float], notes: Sequence[str] = ()) -> list[str]:
    """Why the lock did not hold, each reason once: the loader's notes ('<key>: <reason>',
    native/s3load/lock.go) counted by reason, 'no GOVERNANCE lock on the object (5 of 5 objects)';
    else the failed checks named from the figures. [] when it held."""
    if lock_held(figures):
        return []
    checked = int(figures.get("objects_checked") or 0)
    if "objects_checked" in figures and not checked:
        return ["no object was checked"]
    # A refused overwrite is a note, not a failure (versioning keeps the original either way):
    # only the notes of the three checks are reasons.
    reasons = (str(note).split(": ", 1)[-1] for note in notes)
    counted = Counter(reason for reason in reasons if not reason.startswith("the overwrite was refused"))
    if counted:
        return [f"{reason} ({count} of {checked} objects)" if checked else reason for reason, count in counted.items()]
    return [text for name, text in BROKEN.items() if figures.get(name) != 1]


def verdict(figures: dict[str, float], notes: list[str]) -> str:
    """One line for the live view and, when the lock did not hold, the log; a FAIL says why."""
    passed = lock_held(figures)
    text = (f"immutability {'PASS' if passed else 'FAIL'}: delete refused {figures['lock_delete_refused']:.0f}, "
            f"overwrite kept {figures['lock_overwrite_kept']:.0f}, lock applied {figures['lock_applied']:.0f} "
            f"({figures['objects_checked']:.0f} objects)")
    if not passed:
        text += "; " + "; ".join(failure_reasons(figures, notes))
        log.warning("%s", text)
    return text


def left_behind(removal: Removal, bucket: str, prefix: str, folder: Path | None) -> str:
    """Write the versions compliance keeps into the run folder; the line that says so."""
    where = ""
    if folder is not None and folder.is_dir():
        with open(folder / RETAINED_FILE, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(("key", "version", "retain_until"))
            writer.writerows((r["key"], r["version"], r["until"]) for r in removal.retained)
        where = f" (listed in {RETAINED_FILE})"
    line = (f"{len(removal.retained):,} object versions under {prefix} in bucket {bucket} are under compliance "
            f"retention until {removal.retained_until} at the latest and cannot be removed before then{where}")
    log.warning("%s; the bucket is left too", line)
    return line
