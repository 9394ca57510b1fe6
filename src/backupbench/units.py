"""Exact sizes, rates and durations.

Sizes are integer bytes. Suffixes follow coreutils (dd, truncate) and fio:
a bare letter is binary (``512k`` = 512 KiB, ``1G`` = 1 GiB), ``KiB``/``MiB``/... are binary,
``KB``/``MB``/... are decimal. So KiB and KB are never confused: ``50MB/s`` is 50,000,000
bytes per second, ``50MiB/s`` is 52,428,800.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

KiB = 1024
MiB = 1024**2
GiB = 1024**3
TiB = 1024**4

_PREFIX_POWER = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5, "e": 6}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtpe]?)(i?)(b?)\s*$", re.IGNORECASE)
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*$", re.IGNORECASE)
_DURATION_SECONDS = {None: 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def _quoted(text: object) -> str:
    """The user's input in an error message, cut short so the message stays one line."""
    shown = repr(text)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def parse_size(text: str | int) -> int:
    """'512k' -> 524288, '1GiB' -> 1073741824, '1GB' -> 1000000000. Raises ValueError."""
    if isinstance(text, bool):
        raise ValueError(f"not a size: {_quoted(text)}")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"a size cannot be negative: {text}")
        return text
    match = _SIZE_RE.match(str(text))
    if not match:
        raise ValueError(f"not a size: {_quoted(text)} (use e.g. 512k, 64MiB, 1GiB, 10TB)")
    number, prefix, binary_i, byte_b = match.groups()
    prefix = prefix.lower()
    if binary_i and not prefix:
        raise ValueError(f"not a size: {_quoted(text)}")
    # A bare letter (k, M, G) is binary like fio and dd; 'KB' with a B but no i is decimal.
    base = 1000 if (byte_b and not binary_i and prefix) else 1024
    # Decimal, not float: exact for '0.5GB', and no overflow to infinity for long digit runs.
    value = Decimal(number) * base ** _PREFIX_POWER[prefix]
    if value != value.to_integral_value():
        raise ValueError(f"{_quoted(text)} is not a whole number of bytes")
    return int(value)


def parse_rate(text: str | int) -> int:
    """'50MB/s' -> 50000000 bytes/s; '50MiB/s' -> 52428800. The '/s' is optional."""
    if isinstance(text, int):
        return parse_size(text)
    stripped = str(text).strip()
    if stripped.lower().endswith("/s"):
        stripped = stripped[:-2]
    return parse_size(stripped)


_PERCENT_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%?\s*$")


def parse_percent(text: str | int | float) -> float:
    """'5%' or '5' -> 5.0 (percent). Raises ValueError."""
    if isinstance(text, bool):
        raise ValueError(f"not a percentage: {text!r}")
    if isinstance(text, (int, float)):
        return float(text)
    match = _PERCENT_RE.match(str(text))
    if not match:
        raise ValueError(f"not a percentage: {text!r} (use e.g. 5%)")
    return float(match.group(1))


def parse_duration(text: str | int | float) -> float:
    """'10s' -> 10.0, '2m' -> 120.0, '500ms' -> 0.5; a bare number is seconds."""
    if isinstance(text, bool):
        raise ValueError(f"not a duration: {_quoted(text)}")
    if isinstance(text, (int, float)):
        seconds = float(text)
    else:
        match = _DURATION_RE.match(str(text))
        if not match:
            raise ValueError(f"not a duration: {_quoted(text)} (use e.g. 10s, 2m, 500ms)")
        number, unit = match.groups()
        seconds = float(number) * _DURATION_SECONDS[unit.lower() if unit else None]
    if not math.isfinite(seconds):
        raise ValueError(f"not a duration: {_quoted(text)} (too large)")
    if seconds < 0:
        raise ValueError(f"a duration cannot be negative: {_quoted(text)}")
    return seconds


def format_size(n_bytes: int | float) -> str:
    """Binary units, shortest exact-ish form: 1073741824 -> '1 GiB', 1536 -> '1.5 KiB'."""
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(value) < 1024 or unit == "PiB":
            if unit == "B":
                return f"{int(value)} B"
            return f"{value:.{0 if value == int(value) else 1}f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def to_mib(n_bytes: int | float) -> float:
    return n_bytes / MiB


def format_rate(bytes_per_second: float | None) -> str:
    if bytes_per_second is None:
        return "-"
    return f"{bytes_per_second / MiB:,.1f} MiB/s"


def fio_size(n_bytes: int) -> str:
    """Size for a fio job file, exact: fio reads a bare 'k/m/g' as binary by default."""
    for suffix, factor in (("g", GiB), ("m", MiB), ("k", KiB)):
        if n_bytes % factor == 0 and n_bytes >= factor:
            return f"{n_bytes // factor}{suffix}"
    return str(n_bytes)


def format_duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
