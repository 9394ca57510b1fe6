"""Value types of the S3 options that are more than a number (pure): an object size that may
be a range ('1MiB-8MiB', each end a size or a Veeam block size name), and the shares of a
mixed phase ('put=45,get=45,list=5,delete=5')."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer, TypeAdapter, ValidationError

from backupbench import units
from backupbench.schema import BlockSize, comma_list

_BLOCK_SIZE = TypeAdapter(BlockSize)
MIX_OPS: tuple[str, ...] = ("put", "get", "list", "delete")
DEFAULT_MIX = {"put": 45, "get": 45, "list": 5, "delete": 5}  # warp mixed's shares, roughly


@dataclass(frozen=True)
class SizeRange:
    """Object sizes: one size (low == high) or uniform between low and high, both included."""

    low: int
    high: int

    @property
    def fixed(self) -> bool:
        return self.low == self.high

    @property
    def mean(self) -> int:
        return (self.low + self.high) // 2

    def __str__(self) -> str:
        if self.fixed:
            return units.format_size(self.low)
        return f"{units.format_size(self.low)}-{units.format_size(self.high)}"

    def as_value(self) -> int | str:
        """What settings.json holds: bytes, or 'low-high' in bytes (read back by parse_size_range)."""
        return self.low if self.fixed else f"{self.low}-{self.high}"


def _one(text: str) -> int | None:
    try:
        return int(_BLOCK_SIZE.validate_python(text))
    except (ValidationError, ValueError):
        return None


def parse_size_range(value: object) -> SizeRange:
    """'1MiB', 1048576, 'lan', or 'LOW-HIGH' (each a size or a Veeam name; 'local-16tb' holds
    a '-' of its own, so every split is tried and exactly one must parse)."""
    if isinstance(value, SizeRange):
        return value
    if not isinstance(value, str) or "-" not in value.strip().strip("-"):
        single = _BLOCK_SIZE.validate_python(value)
        return SizeRange(int(single), int(single))
    text = value.strip()
    single = _one(text)
    if single is not None:
        return SizeRange(single, single)
    splits = []
    for at in [i for i, c in enumerate(text) if c == "-"]:
        low, high = _one(text[:at]), _one(text[at + 1:])
        if low is not None and high is not None:
            splits.append((low, high))
    if len(splits) != 1:
        raise ValueError(f"{value!r} is not a size or a range of sizes such as 1MiB-8MiB")
    low, high = splits[0]
    if low > high:
        raise ValueError(f"the range {value!r} is upside down: give the smaller size first")
    return SizeRange(low, high)


ObjectSize = Annotated[SizeRange, BeforeValidator(parse_size_range), PlainSerializer(SizeRange.as_value)]


def parse_mix(value: object) -> object:
    """'put=45,get=45,list=5,delete=5' (a flag) or {put = 45, ...} (a recipe) -> a dict of shares."""
    if isinstance(value, dict) or value is None:
        return value
    items = comma_list(value)
    if not isinstance(items, list):
        return value
    shares: dict[str, object] = {}
    for item in items:
        name, sep, share = str(item).partition("=")
        if not sep:
            raise ValueError(f"{item!r} is not OP=SHARE, e.g. put=45")
        if name.strip() in shares:
            raise ValueError(f"{name.strip()} is listed twice")
        shares[name.strip()] = share.strip()
    return shares


def check_mix(shares: dict[str, int]) -> dict[str, int]:
    unknown = sorted(set(shares) - set(MIX_OPS))
    if unknown:
        raise ValueError(f"{unknown[0]} is not one of {', '.join(MIX_OPS)}")
    if any(share < 0 for share in shares.values()) or sum(shares.values()) <= 0:
        raise ValueError("shares are 0 or more and add up to more than 0")
    return {op: shares[op] for op in MIX_OPS if shares.get(op)}


def mix_text(shares: dict[str, int]) -> str:
    return ",".join(f"{op}={share}" for op, share in shares.items())
