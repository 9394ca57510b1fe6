"""Percentages as users type them ('5%' or '5'), and exact shares of a byte count."""

from __future__ import annotations

import math
import re
from fractions import Fraction

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


def percent_of(size: int, percent: float) -> int:
    """`percent` % of `size` bytes, exact for a decimal percentage, rounded up to a byte."""
    return math.ceil(size * Fraction(str(percent)) / 100)
