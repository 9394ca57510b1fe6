"""The program's entry point: stop signals are caught before anything heavy is imported.

Importing the CLI (click, rich, pydantic) takes a good part of a second; a Ctrl-C in that
time used to end in a KeyboardInterrupt traceback. Here the signal handlers are in place
within milliseconds of start, and an interrupt during the imports is one line and exit 130.
At the end the process leaves with os._exit once its output is flushed: the interpreter's
own shutdown puts the default handlers back, and a signal arriving in that time would kill
the process as if nothing had handled it.
"""

from __future__ import annotations

import os
import sys

from backupbench import stopping


def _leave(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def main() -> None:
    stopping.install()
    code = 1
    try:
        from backupbench.cli.app import main as app_main

        app_main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        sys.stderr.write("backupbench: interrupted\n")
        code = stopping.EXIT_CODE
    _leave(code)
