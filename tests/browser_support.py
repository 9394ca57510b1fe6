"""Headless Chromium for the report tests, with every name resolving to nothing (a page that
needs the network cannot get it), and Chromium's own net log read back for the requests a
page made."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

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


def measured(tmp_path: Path, page: Path, script: str, width: int, height: int = 900) -> Any:
    """What `script` (a JavaScript expression) gives on `page` laid out in a window `width` x
    `height`, as JSON. A report runs no script (its Content-Security-Policy forbids one), so a
    copy beside it is measured: the policy let inline script through, and the script's value
    written into the page after the load, which --dump-dom then reads back. Chromium lays the
    copy out as the page itself: the same CSS, fonts and folder."""
    text = page.read_text()
    allowed = re.sub(r"(Content-Security-Policy\" content=\"default-src 'none';)", r"\1 script-src 'unsafe-inline';",
                     text, count=1)
    assert allowed != text, "the page has no Content-Security-Policy to let the measuring script through"
    probe = ("<script>addEventListener('load', () => { const out = document.createElement('pre'); "
             "out.id = 'backupbench-measured'; out.textContent = JSON.stringify((() => (" + script + "))()); "
             "document.body.append(out); });</script>")
    copy = page.with_name(f"{page.stem}.measured.html")
    head, _, tail = allowed.rpartition("</body>")
    copy.write_text(head + probe + "</body>" + tail)
    dom = chromium(tmp_path, copy.as_uri(), "--dump-dom", f"--window-size={width},{height}",
                   "--virtual-time-budget=5000", name="measure-profile").stdout
    found = re.search(r'<pre id="backupbench-measured">(.*?)</pre>', dom, re.S)
    assert found, "the measuring script wrote nothing (did the page load?)"
    return json.loads(html.unescape(found.group(1)))


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
