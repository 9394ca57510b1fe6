"""Click options derived from a pydantic schema, so each option is defined exactly once."""

from __future__ import annotations

from typing import Any, Callable

import click
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from backupbench import units
from backupbench.schema import validate


def flag_name(field_name: str) -> str:
    return "--" + field_name.replace("_", "-")


def _shown_default(field: FieldInfo) -> str:
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    default = field.default
    if default is None or default is False or default is PydanticUndefined:
        return ""
    if extra.get("metavar") == "SIZE":
        return units.format_size(default).replace(" ", "")
    if extra.get("metavar") == "DURATION":
        return f"{default:g}s"
    if isinstance(default, tuple):
        return ",".join(f"0x{v:02x}" if isinstance(v, int) else str(v) for v in default)
    return str(default)


def _is_flag(field: FieldInfo) -> bool:
    return field.annotation is bool


def click_options(model: type[BaseModel], skip: frozenset[str] = frozenset()) -> Callable:
    """The model's fields as click options; `skip`: names another model already added."""
    def decorate(command: Callable) -> Callable:
        for name, field in reversed(list(model.model_fields.items())):
            if name in skip:
                continue
            extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
            shown = _shown_default(field)
            help_text = (field.description or "") + (f" [default: {shown}]" if shown else "")
            if _is_flag(field):
                option = click.option(flag_name(name), name, is_flag=True, default=False, help=help_text)
            else:
                option = click.option(flag_name(name), name, default=None,
                                      metavar=extra.get("metavar", "VALUE"), help=help_text)
            command = option(command)
        return command
    return decorate


def build(model: type[BaseModel], values: dict[str, Any]) -> Any:
    """The model from the options the user actually gave; unset ones keep their defaults."""
    given = {name: value for name, value in values.items()
             if name in model.model_fields and value is not None
             and not (_is_flag(model.model_fields[name]) and value is False)}
    return validate(model, given, lambda loc: flag_name(str(loc[0])) if loc else "options")


def split(model: type[BaseModel], values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Separate the schema's options from the command's own."""
    mine = {k: v for k, v in values.items() if k in model.model_fields}
    rest = {k: v for k, v in values.items() if k not in model.model_fields}
    return mine, rest
