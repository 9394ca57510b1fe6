"""A property-based recipe fuzzer (hypothesis): mutated recipes get one line naming the key,
never an internal error; a recipe that passes validation plans without error too.

Mutations start from the real recipes in examples/: a value replaced by anything TOML can
hold (huge and negative numbers, inf and nan, empty and control-character strings, lists,
tables nested deep), a key removed, an unknown or misspelt key added; and, on the text,
bytes inserted, lines cut or repeated. Every key of every example is also misspelt in turn
(issue 23: a misspelt required key was reported as missing, its misspelling unnamed).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from backupbench.errors import RecipeError
from backupbench.layouts.actions import GUARD_PROGRAMS, UNDO_PROGRAMS
from backupbench.layouts.capabilities import HostCapabilities
from backupbench.paths import Syntax, for_program
from backupbench.plan import build
from backupbench.recipe import keys, model
from backupbench.recipe.reader import parse_toml
from backupbench.report import plan_view

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.toml"))
BASES = [tomllib.loads(path.read_text()) for path in EXAMPLES]
SOURCE = "fuzz.toml"
# "<source>: <key path>: <message>", the key path as the user wrote it (layout[1].stripes).
_KEY = r"(?:[A-Za-z0-9_-]+|'[^\n]*'|\"[^\n]*\")(?:\[\d+\])*"
ONE_LINE = re.compile(rf"^{re.escape(SOURCE)}: {_KEY}(?:\.{_KEY})*: \S")
EVERYTHING = HostCapabilities(kernel=frozenset({"dm", "dm-thin-pool", "dm-snapshot", "md", "raid456", "zfs",
                                                "fs:xfs", "fs:ext4", "fs:btrfs"}),
                              tools=frozenset({"lvcreate", "thin_check", "mdadm", "mkfs.xfs", "mkfs.ext4",
                                               "mkfs.btrfs", "btrfs", "zpool", "minio"}))

scalars = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=40),
    st.sampled_from(["", "0B", "7", "-1k", "1e400", "99999999999PiB", "0x10", "/dev/vdb", "../x", "-rf",
                     "a:b", "a;b", "$HOME", "nan", "inf", "xfs", "kb2014", "1.5k", "\x00", "é\n", "4k", "64MiB"]),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                      max_leaves=12)


def _paths(data, prefix=()):
    """Every key path in a nested recipe: ('layout', 0, 'stripes'), ..."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield (*prefix, key)
            yield from _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield (*prefix, index)
            yield from _paths(value, (*prefix, index))


def _at(data, path):
    for step in path:
        data = data[step]
    return data


@st.composite
def mutated(draw):
    import copy
    data = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(data))
        path = draw(st.sampled_from(paths))
        parent = _at(data, path[:-1])
        action = draw(st.sampled_from(["replace", "replace", "delete", "add", "typo"]))
        if action == "replace":
            parent[path[-1]] = draw(values)
        elif action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=12))] = draw(values)
        elif action == "typo" and isinstance(parent, dict) and isinstance(path[-1], str) and len(path[-1]) > 2:
            key = path[-1]
            parent[key[:-2] + key[-1] + key[-2]] = parent.pop(key)
    return data


def _plan_is_sound(recipe) -> None:
    plan = build(recipe, "20261123T000000-fuzz0000", EVERYTHING, lambda device: [])
    plan_view.render(plan)
    plan_view.as_dict(plan)
    for step in plan.steps:
        refused = bool(step.refusals)
        for action in step.layout.actions:
            for argv in (*action.do, *action.undo, *((action.guard.argv,) if action.guard else ())):
                assert all(isinstance(a, str) and "\x00" not in a and "\n" not in a for a in argv), argv
                # Every path-like argument is one no program would misread.
                for arg in argv:
                    if arg.startswith("/"):
                        for_program(arg, Syntax.ARGV)
            # cleanup would replay these: only the programs it allows
            assert {argv[0] for argv in action.undo} <= UNDO_PROGRAMS
            assert action.guard is None or action.guard.argv[0] in GUARD_PROGRAMS
        # A plan that is not refused works where fio and MinIO can be told about it.
        if not refused and step.layout.mount_point is not None:
            if any(entry.kind in ("kb2014", "first-write") for entry in recipe.workload):
                for_program(step.layout.mount_point, Syntax.FIO_JOB)
            for drive in step.layout.s3_drives:
                for_program(drive, Syntax.MINIO_DRIVE)


def _check(data) -> None:
    try:
        recipe = model.parse(data, SOURCE)
    except RecipeError as exc:
        line = exc.one_line()
        assert "\n" not in line and "\r" not in line, line
        assert ONE_LINE.match(exc.message), exc.message
        assert len(line) < 600, line
        event("refused with one line")
        return
    event("valid: planned")
    _plan_is_sound(recipe)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_a_mutated_recipe_is_one_line_naming_the_key_or_a_sound_plan(data):
    _check(data)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(EXAMPLES), st.integers(0, 4000), st.sampled_from(["insert", "cut", "repeat", "truncate"]),
       st.text(max_size=6))
def test_a_mangled_recipe_text_is_one_line(path, where, how, junk):
    text = path.read_text()
    where = where % (len(text) + 1)
    lines = text.splitlines(keepends=True)
    if how == "insert":
        text = text[:where] + junk + text[where:]
    elif how == "cut" and lines:
        del lines[where % len(lines)]
        text = "".join(lines)
    elif how == "repeat" and lines:
        lines.insert(where % len(lines), lines[where % len(lines)])
        text = "".join(lines)
    else:
        text = text[:where]
    try:
        data = parse_toml(text, SOURCE)
    except RecipeError as exc:
        assert "\n" not in exc.one_line() and exc.message.startswith(f"{SOURCE}: ")
        return
    _check(data)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_recipe_is_valid_and_plans(path):
    _plan_is_sound(model.parse(tomllib.loads(path.read_text()), str(path)))


def _typos(key: str) -> list[str]:
    """What fingers do: the last letter doubled, the last two swapped, one letter dropped."""
    return list(dict.fromkeys(t for t in (key + key[-1], key[:-2] + key[-1] + key[-2], key[:-1])
                              if t != key and t))


def _key_paths(data, prefix=()):
    """Every key path whose key the user wrote as a table key."""
    return [path for path in _paths(data, prefix) if isinstance(path[-1], str)]


TYPO_MUTANTS = [(path.name, key_path, typo) for path, base in zip(EXAMPLES, BASES)
                for key_path in _key_paths(base) for typo in _typos(key_path[-1])]


def _tagged(base, key_path) -> tuple:
    """A path in the data as pydantic locates it: a tagged list's entry followed by its kind."""
    if len(key_path) > 2 and key_path[0] in keys.TAGGED_LISTS:
        return (*key_path[:2], base[key_path[0]][key_path[1]].get("kind", ""), *key_path[2:])
    return key_path


def _required(base, key_path) -> bool:
    """Whether the key is one the recipe cannot do without (pydantic: missing)."""
    import copy
    data = copy.deepcopy(base)
    del _at(data, key_path[:-1])[key_path[-1]]
    try:
        model.parse(data, SOURCE)
    except RecipeError as exc:
        return exc.message.endswith(("Field required", "needs a kind"))
    return False


@pytest.mark.parametrize("name,key_path,typo", TYPO_MUTANTS,
                         ids=[f"{n}:{'.'.join(map(str, k))}->{t}" for n, k, t in TYPO_MUTANTS])
def test_a_misspelt_key_is_named_in_the_one_line(name, key_path, typo):
    import copy
    base = BASES[[p.name for p in EXAMPLES].index(name)]
    data = copy.deepcopy(base)
    parent = _at(data, key_path[:-1])
    parent[typo] = parent.pop(key_path[-1])
    required = _required(base, key_path)
    try:
        model.parse(data, SOURCE)
    except RecipeError as exc:
        assert ONE_LINE.match(exc.message), exc.message
        if key_path[-2:-1] == ("properties",):  # ZFS's own names, checked by zfs_properties.py
            assert f"{typo!r} is not a ZFS dataset property" in exc.message, exc.message
            return
        table = keys.table_of(model.Recipe, _tagged(base, (*key_path[:-1], typo)))
        if table is not None and typo in table.keys:  # the typo is another real key ('patterns' -> 'pattern')
            return
        assert f"{typo}: is not a known key" in exc.message, exc.message
        if required:   # the key it stands for is named too
            assert f"{key_path[-1]!r} is required and missing" in exc.message, exc.message
        return
    assert not required and key_path[-2:-1] == ("properties",), (key_path, typo)
