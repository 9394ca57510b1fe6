"""Reading a recipe file: a regular file only, a bounded size, strict UTF-8 (a leading
byte-order mark dropped), one-line errors.

`backupbench plan /dev/zero` once read until the kernel killed it for memory; a FIFO would
block forever; bytes that are not UTF-8 and arrays nested thousands deep ended in an
internal error. A recipe is a few KiB of TOML, so anything that is not a regular file of
at most MAX_RECIPE_BYTES is refused before it is read.
"""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path
from typing import Any

from backupbench import units
from backupbench.errors import RecipeError

try:
    import tomllib  # novermin: Python 3.10 has no tomllib and takes the branch below
except ModuleNotFoundError:
    import tomli as tomllib  # the same parser, published on PyPI before 3.11 took it in

MAX_RECIPE_BYTES = 1 * units.MiB
_FIX = "give the path of a .toml recipe, e.g. one in examples/"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_text(path: Path, limit: int = MAX_RECIPE_BYTES) -> str:
    """The file's text; RecipeError naming the problem when it is not a small UTF-8 file."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOCTTY: never adopt a terminal.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise RecipeError(f"recipe {path} does not exist", _FIX) from None
    except OSError as exc:
        raise RecipeError(f"cannot read recipe {path}: {exc.strerror or exc}", _FIX) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RecipeError(f"recipe {path} is {_kind(info.st_mode)}, not a file", _FIX)
        if info.st_size > limit:
            raise RecipeError(f"recipe {path} is {units.format_size(info.st_size)}; a recipe is at most "
                              f"{units.format_size(limit)}", _FIX)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(65536, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise RecipeError(f"cannot read recipe {path}: {exc.strerror or exc}", _FIX) from None
    finally:
        os.close(fd)
    if size > limit:  # it grew while we read it
        raise RecipeError(f"recipe {path} is larger than {units.format_size(limit)}", _FIX)
    data = b"".join(chunks)
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise RecipeError(f"{path} is UTF-16 text (it starts with a UTF-16 byte-order mark)", "save the recipe as UTF-8")
    # A leading UTF-8 byte-order mark (Notepad, PowerShell's Out-File and others write one) is
    # dropped: it says nothing in UTF-8, and tomllib would call it an invalid statement.
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise RecipeError(f"{path}: line {line}: byte {data[exc.start]:#04x} is not UTF-8 text",
                          "save the recipe as UTF-8") from None


def parse_toml(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RecipeError(f"{source}: not valid TOML: {exc}", "check the line it names") from None
    except RecursionError:
        raise RecipeError(f"{source}: arrays or tables are nested too deeply", "a recipe nests a few levels at most") from None


def load_toml(path: Path) -> dict[str, Any]:
    return parse_toml(read_text(path), str(path))
