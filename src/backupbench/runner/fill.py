"""Data put on a layout before a fault (`fault.fill`): ZFS, btrfs and MinIO rebuild only what
they hold, so a rebuild of an empty layout would measure nothing. A filesystem gets one file
written by fio (journalled, removed with the run); a MinIO layout gets objects PUT through its
own server into a bucket of the run's, which lives only on the layout's drives and goes with
them at teardown (so nothing is journalled for it: nothing outlives the layout)."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from backupbench import artefacts
from backupbench.artefacts import TAG, ArtefactName
from backupbench.engines.fio import FioEngine
from backupbench.engines.fio_job import FioJob
from backupbench.engines.s3 import PhaseSpec, S3Engine, S3Target
from backupbench.engines.s3_credentials import Credentials
from backupbench.layouts.minio import S3Connection
from backupbench.units import MiB
from backupbench.workloads.s3_options import run_prefix

FILL_FILE = ArtefactName(f"{TAG}-{{}}", "fill data for the rebuild")
FILL_OBJECT_SIZE = 4 * MiB
FILL_STREAMS = 8


def fill_file(directory: Path, size: int, run_id: str, journal, folder: Path, engine: FioEngine | None = None) -> None:
    """`size` bytes written once, through the page cache and synced at the end: data for the
    rebuild to copy, not a measurement (fio's job file and result kept in `folder`)."""
    path = directory / FILL_FILE.of(run_id)
    journal.will_create(artefacts.file(path, run_id, FILL_FILE.what))
    folder.mkdir(parents=True, exist_ok=True)
    job = FioJob(name="fill", filename=path, rw="write", block_size=MiB, region_size=size, ioengine="psync",
                 direct=False, content=None, end_fsync=True)
    (engine or FioEngine()).run(job, folder, timeout_s=4 * 3600)


def fill_bucket_name(run_id: str) -> str:
    # S3 bucket names: 3-63 characters, lower case, digits and hyphens.
    return f"bb-fill-{run_id.lower()}"[:63]


def fill_s3(server: S3Connection, size: int, run_id: str, folder: Path, engine: S3Engine | None = None) -> int:
    """PUT `size` bytes (whole objects, at least one) into the run's fill bucket; returns how
    many objects."""
    engine = engine or S3Engine()
    target = S3Target(server.endpoint, fill_bucket_name(run_id))
    creds = Credentials(SecretStr(server.access_key), SecretStr(server.secret_key), None, "the layout's MinIO")
    engine.create_bucket(target, creds)
    objects = max(1, size // FILL_OBJECT_SIZE)
    folder.mkdir(parents=True, exist_ok=True)
    # In a bucket of its own: the s3 workloads delete their own prefix after every pass.
    engine.run_phase(target, creds, PhaseSpec("put", run_prefix(run_id), FILL_OBJECT_SIZE, FILL_STREAMS,
                                              objects=objects), folder)
    return objects
