"""Field types with units, shared by every schema: sizes and durations parse via units.py.

Every size is at most MAX_SIZE (a signed 64-bit byte count: what fio, LVM, mkfs and SQLite
can hold), every duration finite and at most MAX_DURATION_S; fields narrow these further
to what their tool takes.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, PlainSerializer

from backupbench import units
from backupbench.paths import PathRefused, Syntax, for_program

MAX_SIZE = 2**63 - 1
# A year: longer than any benchmark phase or watch anybody means.
MAX_DURATION_S = 365 * 86_400.0


def _bounded_size(value: int) -> int:
    if value > MAX_SIZE:
        raise ValueError(f"{value:,} bytes is more than any tool takes (at most 8 EiB)")
    return value


def _finite_duration(value: float) -> float:
    if not math.isfinite(value) or value > MAX_DURATION_S:
        raise ValueError("a duration of more than a year is not a benchmark (at most 365d)")
    return value


def _absolute(example: str):
    def check(value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"must be an absolute path such as {example}, not {value!r}")
        try:
            return for_program(value, Syntax.ARGV)
        except PathRefused as exc:
            raise ValueError(exc.message) from None
    return check


Size = Annotated[int, BeforeValidator(units.parse_size), AfterValidator(_bounded_size), PlainSerializer(int)]
Duration = Annotated[float, BeforeValidator(units.parse_duration), AfterValidator(_finite_duration)]
DevicePath = Annotated[str, AfterValidator(_absolute("/dev/vdb"))]
DirectoryPath = Annotated[str, AfterValidator(_absolute("/srv/backups"))]


def comma_list(value: object) -> object:
    """'a,b' on a command line and ['a', 'b'] in TOML mean the same list."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def no_repeats(values: tuple) -> tuple:
    """A list option that names an entry twice is a typo, not a request to do it twice."""
    repeated = sorted({str(v) for v in values if values.count(v) > 1})
    if repeated:
        raise ValueError(f"{', '.join(repeated)} is listed twice")
    return values
