"""Paths handed to other programs: every one goes through `for_program()`.

A path is data, but each program reads it in its own syntax, and a path that happens to
contain that syntax means something else to the program:
- fio splits `filename=` at ':' into several files, cuts a job-file line at ';' or '#'
  (a comment) and expands '$' (`${VAR}`, `$ncpus`): `/srv/x/victim.db:copy` made fio
  overwrite /srv/x/victim.db, and `/srv/data#new` would have made it write /srv/data.
- QEMU splits an option list (`-drive file=...,format=raw`) at ','.
- MinIO expands `{1...4}` in a drive argument into four drives.
- Any tool reads an argument that starts with '-' as an option.
So a path is made absolute (it can no longer start with '-'), refused when it holds what
the program's syntax cannot carry, with the reason and a fix, and escaped where the syntax
has an escape (fio: '\\:'; QEMU: ',,'). Control characters and bytes that are not UTF-8
are refused everywhere: no syntax above carries a newline, and the results store keeps
text.
"""

from __future__ import annotations

import enum
import os
import re

from backupbench.errors import InputError

# Linux's PATH_MAX counts the terminating NUL; NAME_MAX is one name's limit on every common
# file system (ext4, XFS, btrfs, ZFS, tmpfs).
PATH_MAX_BYTES = 4095
NAME_MAX_BYTES = 255
SHOWN_CHARS = 60
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_MINIO_ELLIPSIS = re.compile(r"\{[^}]*\.\.\.[^}]*\}")


class Syntax(enum.Enum):
    ARGV = "a command's argument"
    FIO_JOB = "a fio job file"
    QEMU_OPTION = "a QEMU option"
    MINIO_DRIVE = "a MinIO drive argument"


class PathRefused(InputError):
    """A path that a program would read as something else."""


# Characters a syntax has no escape for: character -> what the program makes of it.
_UNSAYABLE: dict[Syntax, dict[str, str]] = {
    Syntax.FIO_JOB: {";": "the start of a comment", "#": "the start of a comment",
                     "$": "the start of a variable (${VAR}, $ncpus)"},
}


def _program(syntax: Syntax) -> str:
    return {Syntax.FIO_JOB: "fio", Syntax.QEMU_OPTION: "QEMU", Syntax.MINIO_DRIVE: "MinIO"}.get(syntax, "a program")


def _refuse(text: str, syntax: Syntax, why: str) -> PathRefused:
    return PathRefused(f"the path {text!r} cannot be handed to {_program(syntax)}: {why}",
                       "rename the directory, or mount or bind-mount it at a path without that")


def for_program(path: str | os.PathLike[str], syntax: Syntax = Syntax.ARGV) -> str:
    """`path` as `syntax` must spell it; PathRefused (an InputError) when it cannot be."""
    text = os.path.abspath(os.fspath(path))
    control = _CONTROL.search(text)
    if control:
        raise _refuse(text, syntax, f"it contains the control character {control.group()!r}")
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError:
        raise _refuse(text.encode("utf-8", "surrogateescape").decode("utf-8", "replace"), syntax,
                      "it is not valid UTF-8") from None
    if len(encoded) > PATH_MAX_BYTES:
        raise _refuse(text[:60] + "...", syntax, f"it is {len(encoded):,} bytes long; Linux takes at most "
                                                 f"{PATH_MAX_BYTES:,}")
    longest = max(encoded.split(b"/"), key=len)
    if len(longest) > NAME_MAX_BYTES:
        raise _refuse(_shown(text), syntax, f"it has a name of {len(longest):,} bytes; a file system takes at "
                                            f"most {NAME_MAX_BYTES} a name")
    for char, meaning in _UNSAYABLE.get(syntax, {}).items():
        if char in text:
            raise _refuse(text, syntax, f"it contains {char!r}, which {_program(syntax)} reads as {meaning}")
    if syntax is Syntax.FIO_JOB:
        # fio's only escape: '\:' is a colon inside a name, not a separator between files.
        return text.replace(":", "\\:")
    if syntax is Syntax.QEMU_OPTION:
        return text.replace(",", ",,")
    if syntax is Syntax.MINIO_DRIVE and _MINIO_ELLIPSIS.search(text):
        raise _refuse(text, syntax, "MinIO expands '{a...b}' into several drives")
    return text


def _shown(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 3] + "..."


def shortened(path: str | os.PathLike[str], limit: int = 2 * SHOWN_CHARS) -> str:
    """A path for a message: its start and its end, when it is longer than `limit` characters."""
    text = os.fspath(path)
    if len(text) <= limit:
        return text
    half = (limit - 3) // 2
    return f"{text[:half]}...{text[-half:]}"


def check_length(path: str | os.PathLike[str], what: str, fix: str) -> None:
    """InputError naming `what` when `path` is too long to be opened at all (a name over
    NAME_MAX_BYTES, the whole over PATH_MAX_BYTES): what ENAMETOOLONG would say at the first
    use, said before it, in one line."""
    encoded = os.fsencode(os.fspath(path))
    if len(encoded) > PATH_MAX_BYTES:
        raise InputError(f"{what} {_shown(os.fspath(path))!r} is {len(encoded):,} bytes long; Linux takes at most "
                         f"{PATH_MAX_BYTES:,}", fix)
    longest = max(encoded.split(b"/"), key=len)
    if len(longest) > NAME_MAX_BYTES:
        name = _shown(os.fsdecode(longest))
        raise InputError(f"{what} has a name of {len(longest):,} bytes ({name!r}); a file system takes at most "
                         f"{NAME_MAX_BYTES} a name", fix)
