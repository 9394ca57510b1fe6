"""What the bytes written are: backup files reach a repository compressed (often encrypted), so
the default is data nothing can compress or deduplicate. Storage that compresses or
deduplicates (btrfs compress, ZFS compression, VDO, dedup appliances, S3 back ends) would
otherwise be measured on data it shrinks for free.

- incompressible: random, fresh for every block (fio: refill_buffers, randrepeat=0).
- compressible: `compress` percent of every block compresses away (zeros after random bytes:
  fio's buffer_compress_percentage), `dedupe` percent of the blocks repeat an earlier one
  (fio's dedupe_percentage); either may be 0.
- pattern: one constant byte (field note E's 0x00/0xff/0x55/0xaa passes).

fio gets options; the Python small-file engine and the S3 load generator (Go) make the same
ratios from a seed, deterministically, so that a verify pass knows what each file must hold.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

DataKind = Literal["incompressible", "compressible", "pattern"]
DATA_KINDS: tuple[str, ...] = ("incompressible", "compressible", "pattern")
DEFAULT_PATTERN = 0xAA


@dataclass(frozen=True)
class DataContent:
    kind: DataKind = "incompressible"
    compress: int = 0          # percent of each block that compresses away
    dedupe: int = 0            # percent of blocks that repeat an earlier block
    pattern: int = DEFAULT_PATTERN
    # A workload that writes one constant byte per pass (the small-file engine's `patterns`):
    # those bytes, in order. Empty: every block of every pass is `pattern`.
    passes: tuple[int, ...] = ()

    @property
    def constant(self) -> bool:
        """Every block the same bytes: what compressing or deduplicating storage shrinks to nothing."""
        return self.kind == "pattern"

    @property
    def label(self) -> str:
        if self.kind == "pattern":
            written = tuple(dict.fromkeys(self.passes)) or (self.pattern,)
            if len(written) == 1:
                return f"constant pattern 0x{written[0]:02x}"
            return "constant pattern per pass: " + ", ".join(f"0x{byte:02x}" for byte in self.passes)
        if self.kind == "compressible":
            parts = [f"{self.compress}% compressible"] if self.compress else []
            parts += [f"{self.dedupe}% duplicate blocks"] if self.dedupe else []
            return "random, " + ", ".join(parts or ["0% compressible"])
        return "incompressible (random, fresh for every block)"

    def fio_options(self) -> list[tuple[str, str]]:
        if self.kind == "pattern":
            return [("buffer_pattern", f"0x{self.pattern:02x}")]
        options = [("refill_buffers", "1"), ("randrepeat", "0"), ("buffer_compress_percentage", str(self.compress))]
        if self.dedupe:
            options.append(("dedupe_percentage", str(self.dedupe)))
        return options

    def as_dict(self) -> dict[str, object]:
        return {"data": self.kind, "compress": self.compress, "dedupe": self.dedupe,
                "pattern": self.pattern if self.kind == "pattern" else None, "label": self.label}


def from_settings(settings: dict) -> DataContent | None:
    """The content a workload's stored settings (or a recipe's workload entry) describe; None
    for settings from before backupbench recorded it."""
    kind = settings.get("data")
    if kind not in DATA_KINDS:
        return None
    pattern = settings.get("pattern")
    passes = settings.get("patterns") if kind == "pattern" else None
    return DataContent(kind, compress=int(settings.get("compress") or 0), dedupe=int(settings.get("dedupe") or 0),
                       pattern=DEFAULT_PATTERN if pattern is None else int(pattern),
                       passes=tuple(int(b) for b in passes) if isinstance(passes, (list, tuple)) else ())


def settings_label(settings: dict) -> str:
    """'data: ...' for a run's caption: one workload's, or each distinct one of a recipe's."""
    entries = (settings.get("recipe") or {}).get("workload") or [settings]
    labels = list(dict.fromkeys(c.label for c in map(from_settings, entries) if c is not None))
    return f"data: {'; '.join(labels)}" if labels else ""


class BlockSource:
    """Blocks with the content's ratios, the same for the same (seed, index): a verify pass
    regenerates what a write pass wrote. Random bytes come from SHAKE-128 keyed by (seed,
    index), ~700 MB/s a core; duplicates repeat one of a few pool blocks."""

    DUPLICATE_POOL = 4

    def __init__(self, content: DataContent, seed: int = 0):
        self.content = content
        self.seed = seed

    def _random(self, key: int, size: int) -> bytes:
        return hashlib.shake_128(b"%d:%d" % (self.seed, key)).digest(size)

    def _duplicate(self, index: int) -> bool:
        draw = int.from_bytes(hashlib.blake2b(b"%d:%d" % (self.seed, index), digest_size=4).digest(), "little")
        return draw % 10_000 < self.content.dedupe * 100

    def block(self, index: int, size: int) -> bytes:
        content = self.content
        if content.kind == "pattern":
            return bytes([content.pattern]) * size
        if content.dedupe and self._duplicate(index):
            index = -1 - index % self.DUPLICATE_POOL  # one of the pool's blocks, the same every time
        random_part = size - size * content.compress // 100
        return self._random(index, random_part) + bytes(size - random_part)
