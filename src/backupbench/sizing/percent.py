"""Percentages as users type them ('5%' or '5'), and exact shares of a byte count."""

from __future__ import annotations

import math
from fractions import Fraction

from backupbench.units import parse_percent  # noqa: F401  (the sizing calculators' name for it)


def percent_of(size: int, percent: float) -> int:
    """`percent` % of `size` bytes, exact for a decimal percentage, rounded up to a byte."""
    return math.ceil(size * Fraction(str(percent)) / 100)
