"""Typed errors. Only cli/ turns them into messages and exit codes.

Every error carries a one-line `message` naming the problem and, where there is one,
a `fix` naming what to do about it.
"""

from __future__ import annotations


class BackupbenchError(Exception):
    exit_code = 1

    def __init__(self, message: str, fix: str | None = None):
        super().__init__(message)
        self.message = message
        self.fix = fix

    def one_line(self) -> str:
        return f"{self.message} ({self.fix})" if self.fix else self.message


class InputError(BackupbenchError):
    """The user asked for something that cannot be done as asked (bad path, bad value)."""

    exit_code = 2


class RecipeError(InputError):
    """An option or recipe key failed validation; the message names the key."""


class RefusedError(BackupbenchError):
    """backupbench will not do this because it could destroy or skew something."""

    exit_code = 3


class ToolMissingError(BackupbenchError):
    exit_code = 4


def reason_line(stderr: str) -> str:
    """The line of a tool's error output that says what went wrong: the last one, unless the
    tool then printed its usage text (mkfs.xfs does), in which case the last one before it."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    usage = next((i for i, line in enumerate(lines) if line.lower().startswith("usage:")), None)
    if usage:
        lines = lines[:usage]
    return lines[-1] if lines else "no error output"


class ProcessError(BackupbenchError):
    """An external command failed; `stderr` holds what it said."""

    def __init__(self, argv: list[str], returncode: int | None, stderr: str, message: str | None = None):
        self.argv = argv
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(message or f"{argv[0]} failed (exit {returncode}): {reason_line(stderr)}")


class ProcessTimeout(ProcessError):
    """An external command did not finish within its time limit (and was killed)."""


class EngineError(BackupbenchError):
    """A workload engine could not produce a result."""


class S3Error(BackupbenchError):
    """An S3 request failed. `code` is what failed, as the load generator named it: S3's error
    code (NoSuchBucket, SlowDown, BucketNotEmpty, ...) or a transport kind (timeout, tls,
    connection-refused, not-s3). Callers decide by `code`, never by the message's words. The
    subclasses keep the exit code of what the failure is: bad input, a refusal, or an engine
    failure."""

    def __init__(self, message: str, fix: str | None = None, code: str = ""):
        super().__init__(message, fix)
        self.code = code


class S3InputError(S3Error, InputError):
    """The request cannot work as asked: wrong endpoint, credentials, region, clock."""


class S3RefusedError(S3Error, RefusedError):
    """S3 refused, or backupbench will not go on: access denied, a bucket missing or unfit."""


class S3EngineError(S3Error, EngineError):
    """The server failed the request (InternalError, SlowDown after every retry, ...)."""


class StoreError(BackupbenchError):
    """The results store or a run folder cannot be read or written."""


class NotFoundError(InputError):
    pass


class Interrupted(BackupbenchError):
    """Ctrl-C or SIGTERM arrived; the run was stopped and cleaned up."""

    exit_code = 130


class RunKept(Interrupted):
    """A run was interrupted, cleaned up and stored as interrupted: `run_id` names it. A run
    around it (a recipe's session) passes it on as it is instead of saying it again."""

    def __init__(self, message: str, run_id: str):
        super().__init__(message)
        self.run_id = run_id


class LeftBehind(BackupbenchError):
    """A run measured to its end and stored as it ended (complete or void), but something it
    created could not be removed (a test file on a host that was lost): its journal stays
    open for `backupbench cleanup`. `run` is the stored run, so its figures are still shown."""

    def __init__(self, message: str, fix: str | None, run: object):
        super().__init__(message, fix)
        self.run = run


class ExpectationMissed(BackupbenchError):
    """A run missed a figure it was expected to reach (`--expect`): the run itself is complete
    and stored; the exit code tells a CI gate it failed."""

    exit_code = 5
