"""The engine interface: prepare / run / cleanup, with declared capabilities.

An engine gets a fully resolved spec and a folder for its raw output; it reports progress
through a callback and returns its figures. It never prints and never decides exit codes.
"""

from __future__ import annotations

from typing import Callable, Protocol

# fraction done (0..1) and a short live detail such as the current rate.
ProgressCallback = Callable[[float, str], None]


def no_progress(_fraction: float, _detail: str) -> None:
    return None


class Engine(Protocol):
    name: str
    capabilities: frozenset[str]
