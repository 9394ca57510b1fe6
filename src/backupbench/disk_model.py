"""What a restore of a file would take on a spinning disk: its bytes and its jumps timed with
the per-disk model (a sequential speed and an access time: the repository plan's model,
sizing/operation_model.py), stored beside every measured restore and labelled "model".
Pure arithmetic with no stage of its own: the workloads store it, sizing and reports read it.

On loop devices and SSDs a restore's figure says little about the disks a repository is built
from: a jump costs nothing there. The projection says what the same file, laid out as it is,
would cost on the modelled disk:
- sequential (upper bound): the bytes at the disk's speed, plus one access for every jump a
  read in file order makes (engines/file_map.py);
- random (lower bound, KB2014's 512 KiB blocks at random offsets): each block costs one access
  and its transfer, and one more access for each extent boundary inside it, of which a block
  meets jumps x block / size on average when the jumps are spread over the file.
Queue depth is ignored: one disk serves one request at a time. Nothing else limits (caches,
read-ahead, the controller): a model, and uncertain by nature, which every output says.
"""

from __future__ import annotations

from dataclasses import dataclass

# A 7,200 rpm disk, as the repository plan's help describes one (recipe/policy.DiskModel): about
# 250 MB/s on its outer tracks and 8 ms for a random I/O (half a turn, 4.2 ms, plus the seek).
DEFAULT_SPEED_BPS = 250e6
DEFAULT_ACCESS_S = 0.008
MODEL_SEQUENTIAL, MODEL_RANDOM = "model_seq_bw", "model_random_bw"


@dataclass(frozen=True)
class ModelDisk:
    speed_bps: float = DEFAULT_SPEED_BPS
    access_s: float = DEFAULT_ACCESS_S

    def describe(self) -> str:
        return f"{self.speed_bps / 1e6:,.0f} MB/s, {self.access_s * 1000:g} ms access"


def sequential_bps(size: float, jumps: float, disk: ModelDisk) -> float:
    """A read of the whole file in order: size / (size / speed + jumps x access)."""
    seconds = size / disk.speed_bps + jumps * disk.access_s
    return size / seconds if seconds > 0 else 0.0


def random_bps(size: float, jumps: float, block: float, disk: ModelDisk) -> float:
    """Blocks of `block` bytes at random offsets: block / (access x (1 + jumps x block / size)
    + block / speed); a file no bigger than a block is one read."""
    if size <= 0 or block <= 0:
        return 0.0
    block = min(block, size)
    seconds = disk.access_s * (1.0 + jumps * block / size) + block / disk.speed_bps
    return block / seconds


def projected(figures: dict[str, float], block: float, disk: ModelDisk) -> dict[str, float]:
    """The model's sequential and random restore speeds (B/s) of a file whose figures give its
    map (file_bytes, file_jumps: engines/file_map.FileMap.figures); {} without one."""
    size, jumps = figures.get("file_bytes"), figures.get("file_jumps")
    if not size or jumps is None:
        return {}
    return {MODEL_SEQUENTIAL: sequential_bps(size, jumps, disk), MODEL_RANDOM: random_bps(size, jumps, block, disk)}


def label(disk: ModelDisk) -> str:
    return f"model: a disk of {disk.describe()}"
