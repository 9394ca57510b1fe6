"""The backupbench command: sub-commands, and the one place errors become messages."""

from __future__ import annotations

import logging
import os
import signal
import sys
import traceback

import click

from backupbench import __version__
from backupbench.cli.common import stderr
from backupbench.cli.export_cmd import export_fio_command
from backupbench.cli.history_cmd import history_command, show_command
from backupbench.cli.monitor_cmd import monitor_command
from backupbench.cli.devices_cmd import devices_command
from backupbench.cli.lab_cmd import lab_command
from backupbench.cli.size_cmd import size_command
from backupbench.cli.report_cmd import report_command
from backupbench.cli.recipe_cmds import apply_command, cleanup_command, plan_command
from backupbench.cli.run_cmd import run_command
from backupbench.errors import BackupbenchError

DEBUG_FLAG = "--debug"


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="backupbench")
def app() -> None:
    """What will this storage do under my backup jobs?

    Add --debug anywhere for tracebacks and the commands run.
    """


app.add_command(run_command)
app.add_command(history_command)
app.add_command(show_command)
app.add_command(export_fio_command)
app.add_command(monitor_command)
app.add_command(devices_command)
app.add_command(lab_command)
app.add_command(size_command)
app.add_command(report_command)
app.add_command(plan_command)
app.add_command(apply_command)
app.add_command(cleanup_command)


def _on_sigterm(_signum: int, _frame: object) -> None:
    # SIGTERM and SIGHUP take the same path as Ctrl-C: stop, clean up, keep the partial run.
    raise KeyboardInterrupt


def _fail(message: str, code: int, debug: bool) -> int:
    if debug:
        traceback.print_exc()
    stderr.print(f"backupbench: {message}", markup=False, highlight=False, soft_wrap=True)
    return code


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = DEBUG_FLAG in args or bool(os.environ.get("BACKUPBENCH_DEBUG"))
    args = [a for a in args if a != DEBUG_FLAG]
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(name)s: %(message)s")
    signal.signal(signal.SIGTERM, _on_sigterm)
    # A dropped ssh session (SIGHUP) must also stop the run and tear down what it built.
    signal.signal(signal.SIGHUP, _on_sigterm)
    try:
        code = app.main(args=args, prog_name="backupbench", standalone_mode=False)
    except BackupbenchError as exc:
        return _exit(_fail(exc.message + (f" — {exc.fix}" if exc.fix else ""), exc.exit_code, debug), argv)
    except click.exceptions.Abort:
        return _exit(_fail("interrupted", 130, debug), argv)
    except click.ClickException as exc:
        exc.show()
        return _exit(exc.exit_code, argv)
    except KeyboardInterrupt:
        return _exit(_fail("interrupted", 130, debug), argv)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        return _exit(_fail(f"internal error: {exc!r} — rerun with --debug for the traceback", 70, debug), argv)
    return _exit(code if isinstance(code, int) else 0, argv)


def _exit(code: int, argv: list[str] | None) -> int:
    # Called as a program: exit. Called from tests with argv: hand the code back.
    if argv is None:
        sys.exit(code)
    return code
