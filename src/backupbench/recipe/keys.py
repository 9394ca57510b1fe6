"""A recipe's keys as the user wrote them: key paths, the table each key belongs to, and
what to say about a key that is not there.

A suggestion is drawn from the keys of the table the key sits in, never from every model
of the recipe: `profile` on an lvm-linear layout once got "did you mean 'profile'?",
because btrfs layouts have it. A key of another kind of the same list is said to be one
("a key of btrfs layouts"). A required key misspelt is both missing and unknown; pydantic
reports only the first (or, for `kind`, only that the entry has none), so the misspelt key
is reported instead, with the one it should be.
"""

from __future__ import annotations

import datetime
import difflib
import re
import types
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from backupbench.schema import shown

# Lists whose entries are a union picked by `kind`: pydantic puts the kind into the error's
# location right after the index, where the user wrote no such key.
TAGGED_LISTS = ("layout", "workload")
# difflib's ratio above which a key is taken for a typo of another even if it is a key elsewhere.
CERTAIN = 0.8


def key_path(location: tuple, tagged: bool = True) -> str:
    """('layout', 1, 'lvm-striped', 'stripes') -> 'layout[1].stripes'. tagged=False: a path in
    the data as read (no union tag after a tagged list's index)."""
    parts: list[str] = []
    for position, item in enumerate(location):
        if isinstance(item, int):
            parts[-1:] = [f"{parts[-1]}[{item}]" if parts else f"[{item}]"]
        elif (tagged and position >= 2 and isinstance(location[position - 1], int)
              and location[position - 2] in TAGGED_LISTS):
            continue  # the union's tag, not a key the user wrote
        else:
            parts.append(_key_text(str(item)))
    return ".".join(parts) or "recipe"


def _key_text(key: str) -> str:
    """A key as TOML writes it: bare when it can be, else quoted (and cut short)."""
    if re.fullmatch(r"[A-Za-z0-9_-]+", key):
        return key
    return shown(key)


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The tables a field can hold: X, X | None, tuple[X, ...], Annotated[Union[...], ...]."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _models(get_args(annotation)[0])
    if origin in (Union, types.UnionType, tuple, list):
        return [model for arg in get_args(annotation) for model in _models(arg)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


def _tag(model: type[BaseModel]) -> str | None:
    field = model.model_fields.get("kind")
    if field is None or get_origin(field.annotation) is not Literal:
        return None
    return str(get_args(field.annotation)[0])


@dataclass(frozen=True)
class Table:
    """The table a key sits in: its keys, and for an entry of a tagged list, its kind."""

    keys: frozenset[str]
    kind: str | None = None
    entry: str = ""                                   # "layout", "workload"


def table_of(root: type[BaseModel], location: tuple) -> Table | None:
    """The table holding the key `location` ends with; None where the recipe has free keys."""
    model: type[BaseModel] | None = root
    family: list[type[BaseModel]] = []   # the kinds a tagged list's entry may be, until its tag is read
    kind, entry = None, ""
    for item in location[:-1]:
        if isinstance(item, int):
            continue
        if family:  # the union's tag: which kind this entry is ('' when it has none)
            model = {_tag(member): member for member in family}.get(str(item))
            if model is None:
                return Table(frozenset(key for member in family for key in member.model_fields), entry=entry)
            kind, family = _tag(model), []
            continue
        field = model.model_fields.get(str(item)) if model is not None else None
        members = _models(field.annotation) if field is not None else []
        if not members:
            return None
        if len(members) > 1:
            family, entry = members, str(item)
        else:
            model, kind, entry = members[0], None, ""
    if model is None or family:
        return None
    return Table(frozenset(model.model_fields), kind, entry)


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def owners(root: type[BaseModel], key: str) -> list[str]:
    """Every table of the recipe that has `key`, as a person says it: 'the recipe's top level',
    '[monitor]', 's3 workloads', 'btrfs and zfs layouts', 'layouts', 'layout.filesystem'."""
    found = ["the recipe's top level"] if key in root.model_fields else []
    seen: set[type[BaseModel]] = {root}

    def visit(model: type[BaseModel], path: str) -> None:
        for name, field in model.model_fields.items():
            members = [member for member in _models(field.annotation) if member not in seen]
            seen.update(members)
            kinds = [_tag(member) for member in members]
            if len(members) > 1 and all(kinds):   # a tagged list: which of its kinds have the key
                having = [kind for kind, member in zip(kinds, members) if key in member.model_fields]
                lacking = [kind for kind in kinds if kind not in having]
                if having:
                    found.append(f"{name}s" if not lacking else f"{_and(having)} {name}s" if len(having) <= len(lacking)
                                 else f"{name}s other than {_and(lacking)}")
                for member in members:
                    visit(member, name)
                continue
            label = f"{path}.{name}" if path else f"[{name}]"
            for member in members:
                if key in member.model_fields and label not in found:
                    found.append(label)
                visit(member, label.strip("[]"))

    visit(root, "")
    return found


def suggestion(root: type[BaseModel], error: dict[str, Any]) -> str:
    """What to add to 'is not a known key': the key meant, or where the key belongs."""
    if error.get("type") != "extra_forbidden":
        return ""
    location = tuple(error.get("loc", ()))
    key = str(location[-1])
    context = error.get("ctx") or {}
    if "missing" in context:
        wanted = context["missing"]
        if context.get("close"):
            return f"; did you mean {wanted!r}? ({wanted!r} is required and missing)"
        return f", and the required key {wanted!r} is missing"
    table = table_of(root, location)
    if table is None:
        return ""
    # A near-certain typo of a key here ('name' for 'names') first, then the right key in the
    # wrong table (a suggestion of itself would say nothing), then a likely typo.
    close = difflib.get_close_matches(key, sorted(table.keys), n=1, cutoff=CERTAIN)
    elsewhere = owners(root, key)
    if elsewhere and not close:
        here = f", not of {table.kind} {table.entry}s" if table.kind else ""
        return f"; it is a key of {_and(elsewhere[:3])}{here}"
    close = close or difflib.get_close_matches(key, sorted(table.keys), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def misspelt_required(root: type[BaseModel], errors: list[dict[str, Any]]) -> dict[str, Any]:
    """The error to report: the first one, unless it says a required key (or `kind`) is missing
    where an unknown key sits; then that key, marked with the one it stands for."""
    first = errors[0]
    location = tuple(first.get("loc", ()))
    if first.get("type") == "missing" and location and isinstance(location[-1], str):
        parent, wanted = location[:-1], str(location[-1])
    elif first.get("type") == "union_tag_not_found":
        # '' stands where the entry's kind would be: key_path skips it like a tag.
        parent, wanted = (*location, ""), str((first.get("ctx") or {}).get("discriminator", "kind")).strip("'")
    else:
        return first
    data = first.get("input")
    table = table_of(root, (*parent, wanted))
    if not isinstance(data, dict) or table is None:
        return first
    unknown = [key for key in data if isinstance(key, str) and key not in table.keys]
    if not unknown:
        return first
    close = difflib.get_close_matches(wanted, unknown, n=1)
    key = close[0] if close else unknown[0]
    return {"type": "extra_forbidden", "loc": (*parent, key), "msg": "extra", "input": data[key],
            "ctx": {"missing": wanted, "close": bool(close)}}


TOML_TIMES = (datetime.date, datetime.time)  # datetime.datetime is a date


def first_date(data: Any) -> tuple[tuple, Any] | None:
    """Where the data first holds a TOML date or time (no recipe key takes one), and the value.
    A loop over a stack, not recursion: the data may be nested as deep as the parser allowed."""
    stack: list[tuple[tuple, Any]] = [((), data)]
    while stack:
        location, value = stack.pop()
        if isinstance(value, TOML_TIMES):
            return location, value
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        stack.extend(reversed([((*location, key), item) for key, item in items]))
    return None
