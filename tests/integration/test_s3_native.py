"""The Go unit tests of the load generator (SigV4 against the AWS example, prefix guard, ...)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

NATIVE = Path(__file__).resolve().parents[2] / "native" / "s3load"


def go_binary() -> str:
    found = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if found is None:
        pytest.skip("Go is not installed (make test builds MinIO with it)")
    return found


def test_load_generator_go_tests():
    done = subprocess.run([go_binary(), "test", "./..."], cwd=NATIVE, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-buildvcs=false"})
    assert done.returncode == 0, done.stdout + done.stderr
