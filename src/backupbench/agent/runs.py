"""What the agent's jobs run: the small-file engine under its root, the S3 load generator.

Paths: a subfolder arrives as plain names (protocol.check_subfolder); here it is resolved
with every symlink followed and must still be inside the root, then the missing folders are
made one by one, each checked again after it is made, and removed again at the end if the
agent made them (and they are empty). The engine itself works only in its own tagged folder
inside that, and removes it whatever happens.

S3: the agent claims its prefix only if the bucket exists and nothing is under it yet
(someone else's objects are never touched), runs the phases in order, and at the end deletes
every object under the prefix, also after a failure or a stop.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from backupbench.agent.jobs import Control
from backupbench.agent.protocol import S3Run, SmallFilesRun
from backupbench.engines.s3 import PhaseSpec, S3Engine, S3Target
from backupbench.engines.s3_credentials import Credentials
from backupbench.engines.smallfiles import SmallFilesEngine
from backupbench.errors import BackupbenchError, EngineError, RefusedError


def _inside(root: Path, path: str) -> bool:
    return os.path.commonpath([str(root), path]) == str(root)


def check_inside(root: Path, subfolder: str) -> None:
    """Refuse a subfolder that resolves (symlinks followed) outside the root."""
    if not _inside(root, os.path.realpath(root / subfolder)):
        raise RefusedError(f"subfolder {subfolder!r} leads outside the agent's root (a symlink)",
                           "name a folder inside the root")


def place(root: Path, subfolder: str) -> tuple[Path, list[Path]]:
    """ROOT/subfolder, made if missing; refused if it resolves outside the root. Returns the
    folder and the folders made here (innermost last)."""
    check_inside(root, subfolder)
    made: list[Path] = []
    current = root
    try:
        for part in subfolder.split("/"):
            current = current / part
            if not os.path.lexists(current):
                os.mkdir(current, 0o755)
                made.append(current)
            # Checked after each step: a folder swapped for a symlink meanwhile is caught here.
            if not os.path.isdir(current) or not _inside(root, os.path.realpath(current)):
                raise RefusedError(f"subfolder {subfolder!r} leads outside the agent's root or is not a folder",
                                   "name a folder inside the root")
    except BaseException:
        unplace(made)
        raise
    return current, made


def unplace(made: list[Path]) -> None:
    for folder in reversed(made):
        try:
            os.rmdir(folder)   # only if empty: never a tree the agent did not fill itself
        except OSError:
            pass


def run_smallfiles(request: SmallFilesRun, root: Path, control: Control) -> dict[str, Any]:
    parent, made = place(root, request.subfolder)
    try:
        results = SmallFilesEngine().run(request.job(), parent, request.run_id, control.progress)
    finally:
        unplace(made)
    return {"phases": [r.as_dict() for r in results]}


def _credentials(request: S3Run) -> Credentials:
    return Credentials(request.access_key, request.secret_key, request.session_token, "the controller's request")


def _spec(request: S3Run, op: str, written: set[int]) -> PhaseSpec:
    content = request.content()
    config = {"seed": 0, "data": content.kind, "compress": content.compress, "dedupe": content.dedupe,
              "pattern": content.pattern, "object_size_max": request.object_size}
    if op == "put":
        return PhaseSpec("put", request.prefix, request.object_size, request.concurrency, objects=request.objects,
                         objects_config=config)
    # GET and DELETE only the objects the PUT stored: a failed PUT is not a failed GET.
    count = max(written) + 1 if written else 0
    skip = tuple(n for n in range(count) if n not in written)
    return PhaseSpec(op, request.prefix, request.object_size, request.concurrency, objects=count, skip=skip,
                     objects_config=config)


def run_s3(request: S3Run, control: Control, engine: S3Engine | None = None) -> dict[str, Any]:
    engine = engine or S3Engine()
    target = S3Target(request.endpoint, request.bucket, request.region,
                      request_timeout=request.request_timeout, connect_timeout=request.connect_timeout)
    creds = _credentials(request)
    probe = engine.probe(target, creds, request.prefix)
    if not probe.bucket_exists:
        raise RefusedError(f"bucket {request.bucket} does not exist at {request.endpoint}", "create it first")
    if probe.prefix_empty is False:
        raise RefusedError(f"bucket {request.bucket} already holds objects under {request.prefix}; they are not "
                           "this job's and will not be touched", "use another run id in the prefix")
    phases: list[dict[str, Any]] = []
    removed: int | str = 0
    try:
        with tempfile.TemporaryDirectory(prefix="backupbench-agent-s3-") as tmp:
            written: set[int] = set()
            for op in request.ops:
                spec = _spec(request, op, written)
                if spec.objects == 0:
                    raise EngineError(f"no object was written, so there is nothing to {op}")
                run = engine.run_phase(target, creds, spec, Path(tmp),
                                       lambda fraction, detail, name=op: control.progress(name, fraction, detail))
                if op == "put":
                    written = {r.key for r in run.records if r.ok}
                phases.append({"op": op, "figures": run.figures, "errors": run.errors})
    finally:
        # Whatever happened, the objects under the prefix go: they are this job's alone.
        try:
            removed = engine.delete_prefix(target, creds, request.prefix, timeout=600.0)
        except BackupbenchError as exc:
            removed = f"not removed: {exc.one_line()}"
    return {"phases": phases, "removed": removed, "prefix": request.prefix}
