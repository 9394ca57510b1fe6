"""How backupbench names and tags what it creates, so it can find (only) its own objects."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from backupbench.artefacts import ArtefactName

DEFAULT_MOUNT_ROOT = Path("/run/backupbench")
# The folder a run's layouts are mounted in, under the mount root: named by the run id alone.
MOUNT_FOLDER = ArtefactName("{}", "folder of mount points")


@dataclass(frozen=True)
class Names:
    run_id: str
    layout: str
    mount_root: Path = DEFAULT_MOUNT_ROOT

    @property
    def token(self) -> str:
        # The run id's random part: short enough for XFS labels (12 chars) and md names.
        return self.run_id.rsplit("-", 1)[-1]

    @property
    def run_tag(self) -> str:
        return f"bb_run_{self.run_id}"

    @property
    def vg(self) -> str:
        return f"bb_{self.layout.replace('-', '_')}_{self.token}"

    @property
    def md_name(self) -> str:
        return f"bb-{self.layout}-{self.token}"

    @property
    def md_device(self) -> str:
        return f"/dev/md/{self.md_name}"

    @property
    def label(self) -> str:
        """Filesystem label, unique per run and layout (40 bits), within XFS's 12 characters:
        the guard of a wipe matches it, so one run's wipe cannot match another's disk."""
        digest = hashlib.sha256(f"{self.run_id}/{self.layout}".encode()).hexdigest()
        return f"bb{digest[:10]}"

    @property
    def pool(self) -> str:
        return f"bb_{self.layout.replace('-', '_')}_{self.token}"

    @property
    def mount_point(self) -> Path:
        return self.mount_root / MOUNT_FOLDER.of(self.run_id) / self.layout
