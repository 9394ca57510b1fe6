"""Field types with units, shared by every schema: sizes and durations parse via units.py."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer

from backupbench import units

Size = Annotated[int, BeforeValidator(units.parse_size), PlainSerializer(int)]
Duration = Annotated[float, BeforeValidator(units.parse_duration)]


def comma_list(value: object) -> object:
    """'a,b' on a command line and ['a', 'b'] in TOML mean the same list."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value
