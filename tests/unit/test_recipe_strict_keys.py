"""Every count and switch a recipe holds takes only what it is (issue 37): pydantic's lax mode
read `monthlies = true` as 1, `draid_data = true` as 1 and `reflink = "0"` as false. The rule is
read from the models, so a key added tomorrow as a plain int or bool fails here first."""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pytest
from pydantic import BaseModel, BeforeValidator, Strict

from backupbench.errors import RecipeError
from backupbench.recipe import model
from backupbench.schema import true_or_false, whole_number

# [monitor]'s switch belongs to monitor/options.py, which another change holds: left to it.
NOT_YET = {("MonitorOptions", "no_monitor")}


def _metadata(annotation: Any, field_metadata: list) -> tuple[Any, list]:
    """The type under Annotated and Optional, with the metadata pydantic keeps for it."""
    metadata = list(field_metadata)
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation, *extra = get_args(annotation)
            metadata += extra
        elif origin in (Union, types.UnionType) and type(None) in get_args(annotation):
            rest = [arg for arg in get_args(annotation) if arg is not type(None)]
            if len(rest) != 1:
                return annotation, metadata
            annotation = rest[0]
        else:
            return annotation, metadata


def _models(annotation: Any) -> list[type[BaseModel]]:
    origin = get_origin(annotation)
    if origin is Annotated:
        return _models(get_args(annotation)[0])
    if origin in (Union, types.UnionType, tuple, list, dict):
        return [found for arg in get_args(annotation) for found in _models(arg)]
    return [annotation] if isinstance(annotation, type) and issubclass(annotation, BaseModel) else []


def _scalars(root: type[BaseModel]) -> list[tuple[str, str, Any, list]]:
    """(model, key, type, metadata) of every key of every table a recipe can hold."""
    seen: set[type[BaseModel]] = set()
    found = []

    def visit(table: type[BaseModel]) -> None:
        if table in seen:
            return
        seen.add(table)
        for name, field in table.model_fields.items():
            kind, metadata = _metadata(field.annotation, field.metadata)
            found.append((table.__name__, name, kind, metadata))
            for inner in _models(field.annotation):
                visit(inner)
    visit(root)
    return found


def _checked_by(metadata: list, function) -> bool:
    return any(isinstance(item, BeforeValidator) and item.func is function for item in metadata)


def _strict(metadata: list) -> bool:
    """Strict() itself, or inside a Field(strict=True) under Optional (recipe/hosts.py's agent_port)."""
    return any(isinstance(item, Strict) or _strict(getattr(item, "metadata", None) or []) for item in metadata)


def test_every_count_and_switch_of_a_recipe_is_strict():
    loose = []
    for table, key, kind, metadata in _scalars(model.Recipe):
        if (table, key) in NOT_YET or (kind is not bool and kind is not int and get_origin(kind) is not Literal):
            continue
        if kind is bool and not (_checked_by(metadata, true_or_false) or _strict(metadata)):
            loose.append(f"{table}.{key}")
        numbers = kind is int or (get_origin(kind) is Literal and all(isinstance(a, int) for a in get_args(kind)))
        # A size, rate or byte pattern reads its own text first; its parser refuses true/false and fractions.
        own_parser = any(isinstance(item, BeforeValidator) for item in metadata)
        if numbers and not (_checked_by(metadata, whole_number) or _strict(metadata) or own_parser):
            loose.append(f"{table}.{key}")
    assert loose == []


RECIPE = {"name": "strict", "devices": [f"/dev/vd{c}" for c in "bcdef"],
          "layout": [{"name": "z", "kind": "zfs", "vdev": "draid2", "devices": [f"/dev/vd{c}" for c in "bcdef"]}],
          "workload": [{"kind": "smallfiles"}]}


@pytest.mark.parametrize("where, key, value, message", [
    ("layout", "draid_data", True, "layout[0].draid_data: must be a whole number, not a boolean (got true)"),
    ("layout", "draid_spares", 1.0, "layout[0].draid_spares: must be a whole number, without a decimal point"),
    ("layout", "ashift", "12", "layout[0].ashift: must be a whole number, written without quotes (got '12')"),
    ("workload", "threads", True, "workload[0].threads: must be a whole number, not a boolean"),
    ("workload", "verify", "false", "workload[0].verify: must be true or false, without quotes (got 'false')"),
    ("workload", "keep", 0, "workload[0].keep: must be true or false (got 0)"),
])
def test_a_count_or_a_switch_of_another_type_is_named_with_what_it_must_be(where, key, value, message):
    data = {**RECIPE, where: [{**RECIPE[where][0], key: value}]}
    with pytest.raises(RecipeError) as caught:
        model.parse(data)
    assert caught.value.message.startswith(f"recipe: {message}")


def test_a_command_lines_digits_are_still_a_count():
    from backupbench.workloads.smallfiles import SmallFilesSpec
    assert SmallFilesSpec.model_validate({"files": " 10 ", "threads": "+2"}).threads == 2
