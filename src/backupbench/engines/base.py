"""What every engine shares: how it reports progress.

An engine gets a fully resolved job and a folder for its raw output; it reports progress
through a callback and returns its figures. It never prints and never decides exit codes,
and it knows nothing of workloads, recipes or the store: the workload that drives it does.
"""

from __future__ import annotations

from typing import Callable

# fraction done (0..1) and a short live detail such as the current rate.
ProgressCallback = Callable[[float, str], None]


def no_progress(_fraction: float, _detail: str) -> None:
    return None
