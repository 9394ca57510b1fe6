"""Headless Chromium for the report tests, with every name resolving to nothing (a page that
needs the network cannot get it), and Chromium's own net log read back for the requests a
page made."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(name)), None)
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--hide-scrollbars",
    # Any name resolves to nothing: a page that needs the network cannot get it.
    "--host-resolver-rules=MAP * ~NOTFOUND",
]
WIDTH, HEIGHT = 1280, 2000


def chromium(tmp_path: Path, url: str, *extra: str, name: str = "profile") -> subprocess.CompletedProcess:
    profile = tmp_path / name
    profile.mkdir(exist_ok=True)
    done = subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, url],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def page_requests(net_log: Path) -> list[str]:
    """URLs the page (not the browser's own background services) asked the network for."""
    text = net_log.read_text()
    try:
        log = json.loads(text)
    except json.JSONDecodeError:  # a log Chromium did not get to close
        log = json.loads(text.rstrip().rstrip(",") + "]}")
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    found = []
    for event in log["events"]:
        params = event.get("params") or {}
        if event["type"] == start_job and "url" in params and "file://" in params.get("network_isolation_key", ""):
            found.append(params["url"])
    return found


def report(cli, *args: str, cwd: Path):
    return cli("report", *args, cwd=cwd)
