"""Turn pydantic's errors into one RecipeError line that names the key and the allowed values."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from pydantic import BaseModel, ValidationError

from backupbench.errors import RecipeError

Model = TypeVar("Model", bound=BaseModel)
# A value echoed in a message is cut to this many characters: the line stays one line.
SHOWN_VALUE_CHARS = 60


def shown(value: Any) -> str:
    """repr() of a value, cut short, never recursing into a deep structure."""
    if isinstance(value, (list, tuple, dict)):
        return f"a {'table' if isinstance(value, dict) else 'list'} of {len(value)} item(s)"
    text = repr(value)
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
    if kind not in ("missing", "extra_forbidden") and value is not None and not isinstance(value, dict) and shown(value) not in message:
        message += f" (got {shown(value)})"
    return message


def validate(model: type[Model], data: Any, key_name: Callable[[tuple], str],
             suggest: Callable[[dict[str, Any]], str] = lambda error: "", source: str = "",
             fix: str | None = None) -> Model:
    """Validate `data`; on failure raise RecipeError naming the key as the user wrote it."""
    try:
        return model.model_validate(data)
    except RecursionError:
        raise RecipeError(f"{source + ': ' if source else ''}values are nested too deeply", fix) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = key_name(tuple(first.get("loc", ())))
        prefix = f"{source}: " if source else ""
        raise RecipeError(f"{prefix}{where}: {describe(first)}{suggest(first)}", fix) from exc
