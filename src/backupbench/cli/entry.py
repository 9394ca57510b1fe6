"""The program's entry point: stop signals are caught before anything heavy is imported.

Importing the CLI (click, rich, pydantic) takes a good part of a second; a Ctrl-C in that
time used to end in a KeyboardInterrupt traceback. Here the signal handlers are installed by
the first statement of backupbench's own code, with nothing imported before them but the
package itself and the built-in _signal (`stopping`), and an interrupt from then on is one
line and exit 130. They are installed unarmed and armed inside the try that handles them: a
signal between the two is recorded, then raised there. What comes before is the Python
interpreter's own start (site, the console script), where Python's default handling applies.
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
    stopping.install(armed=False)
    # backupbench uses no pydantic plugin. Without this, the first model built looks for plugins
    # in every installed distribution's entry points: in the lab guest (emulated CPU, Python's
    # files read over 9p) 1.6 s of the CLI's start: 14.2 s with the look, 12.6 s without (median
    # of 3 each).
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    code = 1
    try:
        stopping.arm()
        try:
            from backupbench.cli.app import main as app_main
        except Exception as exc:  # noqa: BLE001 - one line, not a traceback
            _leave(_import_failed(exc))
            return
        app_main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        sys.stderr.write("backupbench: interrupted\n")
        code = stopping.EXIT_CODE
    _leave(code)


def _import_failed(exc: Exception) -> int:
    """An exception out of the CLI's imports. A stop signal there can come back as another
    error: pydantic's compiled core turns a KeyboardInterrupt raised while it builds a model's
    validator into a SchemaError, so a stop that arrived is still a stop (exit 130)."""
    if stopping.requested() is not None:
        sys.stderr.write("backupbench: interrupted\n")
        return stopping.EXIT_CODE
    if "--debug" in sys.argv or os.environ.get("BACKUPBENCH_DEBUG"):
        import traceback

        traceback.print_exc()
    from backupbench.redaction import redact

    sys.stderr.write(f"backupbench: internal error while starting: {redact(repr(exc))} — rerun with --debug for "
                     "the traceback\n")
    return 70
