"""Option and recipe field types, and how a validation error becomes one line.

Neutral ground for every schema: the recipe, the workloads' and layouts' options, the
monitor's, the lab's and the sizing calculators' all use these, so none of them has to
import another's package.

Every size is at most MAX_SIZE (a signed 64-bit byte count: what fio, LVM, mkfs and SQLite
can hold), every rate at most MAX_SIZE a second, every duration finite and at most
MAX_DURATION_S; fields narrow these further to what their tool takes. `validate()` turns
pydantic's errors into a RecipeError that names the key (or flag) as the user wrote it.

A count (`Count`) and a switch (`Flag`) take only what they are: pydantic's lax mode read
`monthlies = true` as 1, `7.5` or `"7"` as a number and `reflink = "0"` as false, each a
guess at what a typo meant. Text is a count only where every value is text (a command line):
the recipe reader validates with TYPED, and there a count in quotes is refused too.
"""

from __future__ import annotations

import datetime
import math
import re
from typing import Annotated, Any, Callable, TypeVar

from pydantic import (AfterValidator, BaseModel, BeforeValidator, Field, PlainSerializer, Strict, ValidationError,
                      ValidationInfo)
from pydantic_core import InitErrorDetails, PydanticCustomError

from backupbench import units
from backupbench.errors import RecipeError
from backupbench.paths import PathRefused, Syntax, for_program
from backupbench.redaction import is_secret_key, redact, redact_value

MAX_SIZE = 2**63 - 1
# A year: longer than any benchmark phase or watch anybody means.
MAX_DURATION_S = 365 * 86_400.0


def _bounded_size(value: int) -> int:
    if value > MAX_SIZE:
        raise ValueError(f"{value:,} bytes is more than any tool takes (at most 8 EiB)")
    return value


def _finite_duration(value: float) -> float:
    if not math.isfinite(value) or value > MAX_DURATION_S:
        raise ValueError("a duration of more than a year is not a benchmark (at most 365d)")
    return value


def _absolute(example: str):
    def check(value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"must be an absolute path such as {example}, not {value!r}")
        try:
            return for_program(value, Syntax.ARGV)
        except PathRefused as exc:
            raise ValueError(exc.message) from None
    return check


def _more_than_nothing(value: int) -> int:
    if value == 0:
        raise ValueError("must be more than 0 bytes")
    return value


def _bounded_rate(value: int) -> int:
    if value > MAX_SIZE:
        raise ValueError(f"{value:,} bytes/s is more than any device moves (at most 8 EiB/s)")
    return value


def _some_speed(value: int) -> int:
    if value == 0:
        raise ValueError("must be more than 0 bytes/s: nothing moves at 0")
    return value


# Given to pydantic as validation context by the recipe reader: its values carry the types the
# file wrote them in, so a count in quotes is a slip; a command line's values are all text.
TYPED = "typed"
# A count's digits as text; int() refuses 4,300 digits, and a count's bounds are far below 100.
_DIGITS = re.compile(r"[+-]?\d+")
MAX_DIGITS = 100


def whole_number(value: object, info: ValidationInfo) -> object:
    """A count as written: an integer, never true/false or 7.0; as text (a flag's), its digits."""
    if isinstance(value, bool):
        raise ValueError("must be a whole number, not a boolean")
    if isinstance(value, float):
        raise ValueError("must be a whole number, without a decimal point")
    if isinstance(value, str):
        if (info.context or {}).get(TYPED):
            raise ValueError("must be a whole number, written without quotes")
        text = value.strip()
        if not _DIGITS.fullmatch(text):
            raise ValueError("must be a whole number")
        if len(text) > MAX_DIGITS:
            raise ValueError(f"a number of more than {MAX_DIGITS} digits is no count")
        return int(text)
    return value


def true_or_false(value: object) -> object:
    if not isinstance(value, bool):
        raise ValueError("must be true or false" + (", without quotes" if isinstance(value, str) else ""))
    return value


Count = Annotated[int, BeforeValidator(whole_number), Strict()]
Flag = Annotated[bool, BeforeValidator(true_or_false), Strict()]


Size = Annotated[int, BeforeValidator(units.parse_size), AfterValidator(_bounded_size), PlainSerializer(int)]
PositiveSize = Annotated[Size, AfterValidator(_more_than_nothing)]
Duration = Annotated[float, BeforeValidator(units.parse_duration), AfterValidator(_finite_duration)]
Rate = Annotated[int, BeforeValidator(units.parse_rate), AfterValidator(_bounded_rate), PlainSerializer(int)]
# A speed a model divides by: 0 B/s is no speed (it made `size repository` divide by zero).
PositiveRate = Annotated[Rate, AfterValidator(_some_speed)]
Percent = Annotated[float, BeforeValidator(units.parse_percent)]
DevicePath = Annotated[str, AfterValidator(_absolute("/dev/vdb"))]
DirectoryPath = Annotated[str, AfterValidator(_absolute("/srv/backups"))]
FilePath = Annotated[str, Field(max_length=4096), AfterValidator(_absolute("/etc/backupbench/agent-token"))]


_RATIO_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?::\s*1\s*)?$")


def parse_ratio(value: object) -> object:
    """'2:1' or '2' (or 2.5) -> 2.0: backups are 1/ratio of the data they protect."""
    if isinstance(value, bool):
        raise ValueError(f"not a ratio: {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    match = _RATIO_RE.match(str(value))
    if not match:
        raise ValueError(f"not a ratio: {str(value)[:40]!r} (use e.g. 2:1 or 2.5)")
    return float(match.group(1))


# A data reduction (compression and deduplication), as 2:1 or 2.
Ratio = Annotated[float, BeforeValidator(parse_ratio)]


def parse_byte(value: object) -> object:
    """One byte: an int, or text in hex with 0x ('0xff') or decimal ('255')."""
    if isinstance(value, bool):
        raise ValueError(f"not a byte pattern: {value!r}")
    if isinstance(value, str):
        text = value.strip().lower()
        try:
            return int(text, 16) if text.startswith("0x") else int(text, 10)
        except ValueError:
            raise ValueError(f"not a byte pattern: {value!r} (use e.g. 0x00, 0xff, 85)") from None
    return value


Pattern = Annotated[int, BeforeValidator(parse_byte), Field(ge=0, le=255)]

# Veeam's storage optimization settings -> the block size its backup files are written in.
VEEAM_BLOCK_SIZES = {"local-16tb": 4 * units.MiB, "local": units.MiB, "lan": 512 * units.KiB, "wan": 256 * units.KiB}


def _block_size(value: object) -> object:
    if isinstance(value, str) and value.strip().lower() in VEEAM_BLOCK_SIZES:
        return VEEAM_BLOCK_SIZES[value.strip().lower()]
    return units.parse_size(value)


# A size, or a Veeam block size by its name (local-16tb, local, lan, wan).
BlockSize = Annotated[int, BeforeValidator(_block_size), AfterValidator(_bounded_size), PlainSerializer(int)]


def comma_list(value: object) -> object:
    """'a,b' on a command line and ['a', 'b'] in TOML mean the same list."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def no_repeats(values: tuple) -> tuple:
    """A list option that names an entry twice is a typo, not a request to do it twice."""
    repeated = sorted({str(v) for v in values if values.count(v) > 1})
    if repeated:
        raise ValueError(f"{', '.join(repeated)} is listed twice")
    return values


Model = TypeVar("Model", bound=BaseModel)
# A value echoed in a message is cut to this many characters: the line stays one line.
SHOWN_VALUE_CHARS = 60


def shown(value: Any, key: object = None) -> str:
    """repr() of a value, cut short, never recursing into a deep structure; a TOML date or
    time as TOML writes it (2026-01-01), not as Python's repr. key: the key or flag it was
    given for (a URL's is quoted as one URL: redaction.redact_value)."""
    if isinstance(value, (list, tuple, dict)):
        return f"a {'table' if isinstance(value, dict) else 'list'} of {len(value)} item(s)"
    if isinstance(value, (datetime.date, datetime.time)):
        text = value.isoformat()
    elif isinstance(value, bool):  # as TOML writes it: `monthlies = true` is said back as true
        text = "true" if value else "false"
    else:  # a string redacted as the value it is, then quoted
        text = repr(redact_value(value, key)) if isinstance(value, str) else redact(repr(value))
    if len(text) <= SHOWN_VALUE_CHARS:
        return text
    if isinstance(value, str):  # keep the closing quote: the cut is inside the string
        return text[:SHOWN_VALUE_CHARS - 4] + "..." + text[0]
    return text[:SHOWN_VALUE_CHARS - 3] + "..."


def describe(error: dict[str, Any]) -> str:
    kind = error.get("type")
    # pydantic prefixes errors raised in our validators with "Value error, ".
    message = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
    ctx = error.get("ctx") or {}
    if kind == "literal_error" and "expected" in ctx:
        message = f"must be one of {ctx['expected']}"
    elif kind == "extra_forbidden":
        message = "is not a known key"
    elif kind == "union_tag_invalid":
        message = f"kind {shown(ctx.get('tag'))} is not one of {ctx.get('expected_tags')}"
    elif kind == "union_tag_not_found":
        message = "needs a kind"
    elif kind in ("model_type", "dict_type", "model_attributes_type"):
        message = "must be a table, e.g. { type = \"xfs\" }"
    value = error.get("input")
    if any(is_secret_key(part) for part in error.get("loc", ())):
        return message  # a secret's value is never echoed
    key = next((part for part in reversed(error.get("loc", ())) if isinstance(part, str)), None)
    if kind not in ("missing", "extra_forbidden") and value is not None and not isinstance(value, dict) and shown(value, key) not in message:
        message += f" (got {shown(value, key)})"
    return message


def key_error(key: str, message: str, value: Any) -> ValidationError:
    """A check of a whole table that is about one of its keys, raised from a model validator:
    pydantic puts a ValueError there at the table (`layout[3]`), this at the key
    (`layout[3].draid_data`)."""
    return key_error_at((key,), message, value)


def key_error_at(location: tuple, message: str, value: Any) -> ValidationError:
    """key_error at a key further down (`workload[0].sweep.iodepth`), the location as pydantic
    writes it (a tagged list's entry with its kind after the index)."""
    error = PydanticCustomError("value_error", "{message}", {"message": message})
    return ValidationError.from_exception_data("key", [InitErrorDetails(type=error, loc=location, input=value)])


def validate(model: type[Model], data: Any, key_name: Callable[[tuple], str], *,
             suggest: Callable[[dict[str, Any]], str] = lambda error: "", source: str = "",
             fix: str | None = None,
             choose: Callable[[list[dict[str, Any]]], dict[str, Any]] = lambda errors: errors[0],
             context: dict[str, Any] | None = None) -> Model:
    """Validate `data`; on failure raise RecipeError naming the key as the user wrote it.
    choose: the one error of pydantic's list that is reported (the first, unless told);
    context: pydantic's validation context (TYPED for a file's values)."""
    try:
        return model.model_validate(data, context=context)
    except RecursionError:
        raise RecipeError(f"{source + ': ' if source else ''}values are nested too deeply", fix) from None
    except ValidationError as exc:
        first = choose(exc.errors())
        where = key_name(tuple(first.get("loc", ())))
        prefix = f"{source}: " if source else ""
        raise RecipeError(f"{prefix}{where}: {describe(first)}{suggest(first)}", fix) from exc
