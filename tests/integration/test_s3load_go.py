"""The S3 load generator's own Go tests (native/s3load: `go test ./...`), so `make test` runs
them: the headers AWS documents on every request kind, checked on what a local server received;
retries and their counts; SigV4 against AWS's example; the objects' content; prefixes; the
endpoint probe. They use httptest servers on 127.0.0.1 only. Go builds with the cache of the
Go that `make test` already uses to build the loader (scripts/install-minio.sh), so a run
after the first compiles only what changed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.real
LOADER = Path(__file__).resolve().parents[2] / "native" / "s3load"


def find_go() -> str:
    """The Go scripts/install-minio.sh builds with: $GO, then PATH, then /usr/local/go."""
    for candidate in (os.environ.get("GO"), shutil.which("go"), "/usr/local/go/bin/go"):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    pytest.skip("Go is not installed (https://go.dev/dl, or GO=/path/to/go; make test needs it for the S3 loader)")


def go(*args: str) -> subprocess.CompletedProcess:
    # Never another toolchain than the one installed, as the build script.
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-buildvcs=false"}
    return subprocess.run([find_go(), *args], cwd=LOADER, env=env, capture_output=True, text=True, timeout=900)


def test_the_loaders_go_tests_pass():
    done = go("test", "-count=1", "./...")
    assert done.returncode == 0, (done.stdout[-6000:] + done.stderr[-2000:])
    assert done.stdout.startswith("ok")


def test_the_loader_is_gofmt_clean():
    gofmt = Path(find_go()).with_name("gofmt")
    if not gofmt.is_file():
        pytest.skip("gofmt is not beside go")
    done = subprocess.run([str(gofmt), "-l", "."], cwd=LOADER, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "", done.stdout
