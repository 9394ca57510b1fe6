"""Turn pydantic's errors into one RecipeError line that names the key and the allowed values."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from pydantic import BaseModel, ValidationError

from backupbench.errors import RecipeError

Model = TypeVar("Model", bound=BaseModel)


def _describe(error: dict[str, Any]) -> str:
    message = error.get("msg", "invalid value")
    # pydantic prefixes errors raised in our validators with "Value error, ".
    message = message.removeprefix("Value error, ")
    ctx = error.get("ctx") or {}
    if error.get("type") == "literal_error" and "expected" in ctx:
        message = f"must be one of {ctx['expected']}"
    if error.get("type") == "extra_forbidden":
        message = "is not a known option"
    return message


def validate(model: type[Model], data: dict[str, Any], key_name: Callable[[tuple], str]) -> Model:
    """Validate `data`; on failure raise RecipeError naming the key as the user wrote it."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        location = tuple(first.get("loc", ()))
        value = first.get("input")
        message = _describe(first)
        shown = ""
        if value is not None and not isinstance(value, dict) and repr(value) not in message:
            shown = f" (got {value!r})"
        raise RecipeError(f"{key_name(location)}: {message}{shown}") from exc
