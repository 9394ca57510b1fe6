"""The backupbench command: sub-commands, and the one place errors become messages."""

from __future__ import annotations

import logging
import os
import signal
import sys
import traceback

import click
from pydantic_core import SchemaError

from backupbench import __version__, stopping
from backupbench.cli.common import finished_runs, printed_documents, stderr, write_document
from backupbench.cli.lazy_group import LazyGroup
from backupbench.errors import BackupbenchError
from backupbench.redaction import redact, redact_logging
from backupbench.results.document import error_document
from backupbench.results.model import COMPLETE, VOID

DEBUG_FLAG = "--debug"
JSON_FLAG = "--json"


# Each command's module is imported when the command is named (cli/lazy_group.py says why).
COMMANDS = {
    "run": "backupbench.cli.run_cmd:run_command",
    "sweep": "backupbench.cli.sweep_cmd:sweep_command",
    "history": "backupbench.cli.history_cmd:history_command",
    "show": "backupbench.cli.history_cmd:show_command",
    "export-fio": "backupbench.cli.export_cmd:export_fio_command",
    "export": "backupbench.cli.export_cmd:export_command",
    "monitor": "backupbench.cli.monitor_cmd:monitor_command",
    "devices": "backupbench.cli.devices_cmd:devices_command",
    "lab": "backupbench.cli.lab_cmd:lab_command",
    "size": "backupbench.cli.size_cmd:size_command",
    "report": "backupbench.cli.report_cmd:report_command",
    "plan": "backupbench.cli.recipe_cmds:plan_command",
    "apply": "backupbench.cli.recipe_cmds:apply_command",
    "cleanup": "backupbench.cli.recipe_cmds:cleanup_command",
    "hosts": "backupbench.cli.hosts_cmd:hosts_command",
    "agent": "backupbench.cli.agent_cmd:agent_command",
}


@click.group(cls=LazyGroup, lazy_commands=COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="backupbench")
def app() -> None:
    """What will this storage do under my backup jobs?

    Add --debug anywhere for tracebacks and the commands run.
    """


def _fail(message: str, code: int, debug: bool, fix: str | None = None, as_json: bool = False) -> int:
    """One line on stderr; with --json, the error document on stdout too, unless the
    command already printed its own document there. Secrets are hidden in all three."""
    message, fix = redact(message), redact(fix) if fix else fix
    if debug:
        sys.stderr.write(redact(traceback.format_exc()))
    stderr.print(f"backupbench: {message}" + (f" — {fix}" if fix else ""), markup=False, highlight=False,
                 soft_wrap=True)
    if as_json and not printed_documents:
        write_document(error_document(message, fix, code))
    return code


def _usage_fix(exc: click.UsageError) -> str:
    command = exc.ctx.command_path if exc.ctx is not None else "backupbench"
    return f"see `{command} --help`"


def wants_json(args: list[str]) -> bool:
    """--json among the options (after `--` it would be a path)."""
    options = args[:args.index("--")] if "--" in args else args
    return JSON_FLAG in options


def _dispatch(args: list[str], debug: bool) -> int:
    as_json = wants_json(args)
    try:
        code = app.main(args=args, prog_name="backupbench", standalone_mode=False)
    except BackupbenchError as exc:
        return _fail(exc.message, exc.exit_code, debug, exc.fix, as_json)
    except (click.exceptions.Abort, KeyboardInterrupt):
        return _fail("interrupted", stopping.EXIT_CODE, debug, as_json=as_json)
    except click.UsageError as exc:
        return _fail(exc.format_message(), exc.exit_code, debug, _usage_fix(exc), as_json)
    except click.ClickException as exc:
        return _fail(exc.format_message(), exc.exit_code, debug, as_json=as_json)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        if isinstance(exc, SchemaError) and stopping.requested() is not None:
            # pydantic's compiled core turns a KeyboardInterrupt raised while it builds a
            # validator (a command's module imported, a model first used) into a SchemaError:
            # the stop is what happened. Any other error after a stop is still shown.
            return _fail("interrupted", stopping.EXIT_CODE, debug, as_json=as_json)
        return _fail(f"internal error: {exc!r}", 70, debug, "rerun with --debug for the traceback", as_json)
    return code if isinstance(code, int) else 0


def _stopped(code: int, debug: bool) -> int:
    """A stop signal arrived (perhaps after the last phase, perhaps swallowed on the way):
    the command ends with 130 whatever it was about to return, and a run it finished is
    stored as interrupted."""
    signum = stopping.requested()
    if signum is None:
        return code
    for store, run_id in finished_runs:
        store.mark_interrupted(run_id, f"{stopping.signal_name(signum)} arrived after the last phase; the "
                                       "figures are complete", if_status=(COMPLETE, VOID))
    if code != stopping.EXIT_CODE:
        _fail(f"interrupted ({stopping.signal_name(signum)})", stopping.EXIT_CODE, debug=False)
    return stopping.EXIT_CODE


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = DEBUG_FLAG in args or bool(os.environ.get("BACKUPBENCH_DEBUG"))
    args = [a for a in args if a != DEBUG_FLAG]
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(name)s: %(message)s")
    redact_logging()
    in_process = argv is not None
    previous = {sig: signal.getsignal(sig) for sig in stopping.WATCHED} if in_process else {}
    if in_process:
        stopping.reset()
        finished_runs.clear()
        printed_documents.clear()
    stopping.install()
    try:
        try:
            code = _dispatch(args, debug)
        except KeyboardInterrupt:  # the first signal, while an error was being printed
            code = _fail("interrupted", stopping.EXIT_CODE, debug, as_json=wants_json(args))
        # Closing: nothing cuts it short, and a signal until here still counts.
        with stopping.held():
            code = _stopped(code, debug)
            stopping.acknowledge()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return _exit(code, argv)


def _exit(code: int, argv: list[str] | None) -> int:
    # Called as a program: exit. Called from tests with argv: hand the code back.
    if argv is None:
        sys.exit(code)
    return code
