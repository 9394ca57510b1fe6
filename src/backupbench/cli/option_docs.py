"""docs/options.md, the option reference, generated from the models every option is defined in
(`make options`, or `python -m backupbench.cli.option_docs FILE`); tests/unit/test_option_docs.py
fails when the committed page is not what the models generate.

Recipe tables come from the pydantic models a recipe is composed of (recipe/model.py: each
workload's entry, each layout kind's spec, [monitor], [hosts], [policy]); commands from the
click commands themselves, whose model-made options cli/options.py derived from the same
fields. Nothing here describes an option: a description, default or unit shown is the model's.
"""

from __future__ import annotations

import re
import sys
import types
import typing
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, Union

import click
from pydantic import AfterValidator, BaseModel, BeforeValidator, PlainValidator, SecretStr, WrapValidator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from backupbench import schema, units
from backupbench.cli.app import app
from backupbench.layouts.registry import LAYOUTS
from backupbench.layouts.specs import FilesystemSpec
from backupbench.faults.spec import FaultSpec
from backupbench.monitor.options import MonitorOptions
from backupbench.recipe.hosts import HostsSpec
from backupbench.recipe.model import Recipe
from backupbench.recipe.policy import PolicyTable
from backupbench.workloads.registry import WORKLOADS
from backupbench.workloads.s3_values import SizeRange

PAGE = Path(__file__).parents[3] / "docs" / "options.md"

# What a value is, from the parser a field's type runs (schema.py's shared types).
_KINDS = {units.parse_size: "size", units.parse_duration: "duration", units.parse_rate: "rate",
          units.parse_percent: "percent", schema.parse_byte: "byte", schema.whole_number: "integer",
          schema.true_or_false: "true/false"}
_VALIDATORS = (AfterValidator, BeforeValidator, PlainValidator, WrapValidator)
_DEFAULT_NOTE = re.compile(r"\s*\[default: ([^\]]*)\]\s*$")
# What a value is, from the metavar of a field whose type says less (a plain float of percent).
_METAVARS = {"SIZE": "size", "DURATION": "duration", "RATE": "rate", "PERCENT": "percent"}
# Paths, from the shared types that check them (schema.py).
_PATHS = {id(item): name for alias, name in ((schema.DevicePath, "device path"), (schema.DirectoryPath, "absolute path"),
                                             (schema.FilePath, "absolute file path"))
          for item in alias.__metadata__}

HEAD = """# Option reference

```sh
backupbench run --help       # every flag of run, with the descriptions below
make options                 # writes this page again from the models
```

Generated from the models every option is defined in, once: a workload's options in
`workloads/*.py`, a layout kind's keys in `layouts/*.py`, the recipe's own keys and `[hosts]`,
`[policy]` in `recipe/*.py`, the monitor's in `monitor/options.py`, the sizing answers' in
`sizing/options.py` and `sizing/policy.py`, the lab's in `lab/options.py`; `cli/options.py` makes
the flags from them. Do not edit this page: change the model and run `make options`
(`src/backupbench/cli/option_docs.py`); `tests/unit/test_option_docs.py` fails while the page
differs from what the models generate.

Values: a **size** is `512k`, `64MiB`, `6TB` (a bare letter is binary like fio and dd: `512k` =
512 KiB; `KiB/MiB/GiB` binary, `KB/MB/GB` decimal); a **duration** `500ms`, `10s`, `5m`, `8h`
(a bare number is seconds); a **rate** `50MiB/s`, `250MB/s`; a **percent** `5%` or `5`; a
**list** is comma-separated on the command line (`--operations a,b`) and a TOML list in a
recipe (`operations = ["a", "b"]`). A flag's recipe key is its name with `_` for `-`.

- [Workloads](#workloads): flags of `backupbench run`, keys of a recipe's `[[workload]]`
- [Recipe tables](#recipe-tables): the recipe's own keys, `[[layout]]` by kind, `filesystem`,
  `fault`, `[monitor]`, `[hosts]`, `[policy]`
- [Commands](#commands): every command's flags and arguments
"""


def _cell(text: str) -> str:
    """One table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]


def _parts(annotation: Any) -> Iterator[Any]:
    """Every piece of metadata inside a type (Annotated's, through Optional, Union and tuple)."""
    if typing.get_origin(annotation) is typing.Annotated:
        yield from annotation.__metadata__
    for argument in typing.get_args(annotation):
        yield from _parts(argument)


def _parsers(annotation: Any, field: FieldInfo | None = None) -> list[Any]:
    metadata = [*_parts(annotation), *(field.metadata if field is not None else ())]
    return [item.func for item in metadata if isinstance(item, _VALIDATORS)]


def _without_none(annotation: Any) -> list[Any]:
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    return [annotation]


def _metavar(field: FieldInfo | None) -> str:
    extra = field.json_schema_extra if field is not None and isinstance(field.json_schema_extra, dict) else {}
    return str(extra.get("metavar", ""))


def value_kind(annotation: Any, field: FieldInfo | None = None) -> str:
    """What a value of this type is, in words: size, duration, list of ..., `a` | `b`."""
    if annotation is None or annotation is type(None):
        return "none: leave it unset"
    kinds = [_KINDS[func] for func in _parsers(annotation, field) if func in _KINDS]
    kinds += [_PATHS[id(item)] for item in [*_parts(annotation), *(field.metadata if field else ())]
              if id(item) in _PATHS]
    if _metavar(field) in _METAVARS:
        kinds.insert(0, _METAVARS[_metavar(field)])
    choices = _without_none(annotation)
    if len(choices) > 1:
        return " or ".join(value_kind(choice) for choice in choices)
    bare = typing.get_origin(choices[0]) is typing.Annotated and typing.get_args(choices[0])[0] or choices[0]
    origin = typing.get_origin(bare)
    if origin is tuple:
        return "list of " + value_kind(typing.get_args(bare)[0])
    if origin is Literal:
        return " | ".join(f"`{value}`" for value in typing.get_args(bare))
    if kinds:
        return kinds[0]
    if isinstance(bare, type) and issubclass(bare, BaseModel):
        return "table"
    return {bool: "true/false", int: "integer", float: "number", str: "text", dict: "table",
            SecretStr: "text (secret)", SizeRange: "size or size range"}.get(bare if isinstance(bare, type) else origin,
                                                                              "text")


def _duration_text(seconds: float) -> str:
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def default_text(field: FieldInfo) -> str:
    """A field's default as a user would write it; 'required' when it has none."""
    value = field.default_factory() if field.default_factory is not None else field.default
    if value is PydanticUndefined:
        return "required"
    if isinstance(value, (BaseModel, SizeRange)):
        return "" if isinstance(value, BaseModel) else str(value).replace(" ", "")
    if value is None or value == () or value == {}:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    kind = value_kind(field.annotation, field)
    if kind == "size" and isinstance(value, int):
        return units.format_size(value).replace(" ", "")
    if kind == "rate":
        return units.format_size(value).replace(" ", "") + "/s"
    if kind == "duration":
        return _duration_text(value)
    if kind == "percent":
        return f"{value:g}%"
    if isinstance(value, dict):
        return ",".join(f"{key}={item}" for key, item in value.items())
    if isinstance(value, tuple):
        return ",".join(f"0x{item:02x}" if isinstance(item, int) else str(item) for item in value)
    return str(value)


def model_rows(model: type[BaseModel], flags: dict[str, str] | None = None,
               only: Callable[[str], bool] = lambda name: name != "kind") -> list[tuple[str, ...]]:
    """One row per field `only` keeps: (flag,) key, value, default, description."""
    rows = []
    for name, field in model.model_fields.items():
        if not only(name):
            continue
        row = (f"`{name}`", value_kind(field.annotation, field), default_text(field), field.description or "")
        rows.append(((f"`{flags[name]}`" if name in flags else "",) + row) if flags is not None else row)
    return rows


def _row(field: FieldInfo) -> tuple[str, ...]:
    return value_kind(field.annotation, field), default_text(field), field.description or ""


def shared_fields(models: list[type[BaseModel]]) -> dict[str, tuple[str, ...]]:
    """The fields more than half the models have alike (type, default, description), by name:
    written once; a model whose field differs lists its own."""
    seen: dict[str, list[tuple[str, ...]]] = {}
    for model in models:
        for name, field in model.model_fields.items():
            seen.setdefault(name, []).append(_row(field))
    common = {name: max(set(rows), key=rows.count) for name, rows in seen.items() if name != "kind"}
    return {name: row for name, row in common.items() if seen[name].count(row) > len(models) / 2}


def _own(model: type[BaseModel], shared: dict[str, tuple[str, ...]]) -> Callable[[str], bool]:
    """The fields of `model` its own table lists: those not shared, or not as shared."""
    return lambda name: name != "kind" and shared.get(name) != _row(model.model_fields[name])


def _flags_of(*path: str) -> dict[str, str]:
    """The flag each option name is, of the command at `path` (recipe tables that share its options)."""
    command: click.Command = app
    for name in path:
        command = command.get_command(click.Context(command), name)
    return {param.name: param.opts[0] for param in command.params if isinstance(param, click.Option)}


def _with_missing(shared: dict[str, tuple[str, ...]], models: list[tuple[str, type[BaseModel]]], what: str) -> str:
    unlike = [label for label, model in models if any(shared[name] != _row(model.model_fields[name])
                                                       if name in model.model_fields else True for name in shared)]
    return (f"Every {what} takes these keys" + (f"; where one differs ({', '.join(unlike)}), its own table says "
                                                "how" if unlike else "") + ".")


def workload_sections() -> list[str]:
    flags = _flags_of("run")
    entries = [definition.recipe_entry for definition in WORKLOADS.values()]
    shared = shared_fields(entries)
    header = ("flag of run", "recipe key", "value", "default", "description")
    lines = ["## Workloads", "",
             "`backupbench run --workload NAME` takes these as flags; a recipe's `[[workload]]` entry with "
             "`kind = \"NAME\"` as keys (a flag of another workload is refused).", "",
             "### Every workload", "",
             _with_missing(shared, [(name, d.recipe_entry) for name, d in WORKLOADS.items()], "workload"), "",
             *_table(header, [(f"`{flags[name]}`" if name in flags else "", f"`{name}`", *row)
                              for name, row in shared.items()]), ""]
    for name, definition in WORKLOADS.items():
        lines += [f"### Workload {name}", "", f"{definition.description}. `kind = \"{name}\"`.", ""]
        lines += _table(header, model_rows(definition.recipe_entry, flags, _own(definition.recipe_entry, shared)))
        lines.append("")
    return lines


def _recipe_top() -> list[str]:
    nested = {"layout": "[[layout]] entries, below", "workload": "[[workload]] entries ([Workloads](#workloads))",
              "monitor": "[monitor], below", "hosts": "[hosts], below", "policy": "[policy], below"}
    rows = [(f"`{name}`", "table" if name in nested else value_kind(field.annotation, field),
             default_text(field) if name not in nested else "", (field.description or "")
             + (f" See {nested[name]}." if name in nested else ""))
            for name, field in Recipe.model_fields.items()]
    return ["### The recipe's own keys", "", *_table(("key", "value", "default", "description"), rows), ""]


def recipe_sections() -> list[str]:
    lines = ["## Recipe tables", "", "A recipe is TOML: its own keys, then `[[layout]]` entries (one table per "
             "layout, `kind` naming its kind), `[[workload]]` entries, and the optional tables below. An unknown "
             "key is refused with the keys of its table to choose from.", ""]
    lines += _recipe_top()
    header = ("key", "value", "default", "description")
    specs = [spec for spec, _ in LAYOUTS.values()]
    shared = shared_fields(specs)
    lines += ["### Every layout", "", _with_missing(shared, [(kind, spec) for kind, (spec, _) in LAYOUTS.items()],
                                                    "layout kind"), "",
              *_table(header, [(f"`{name}`", *row) for name, row in shared.items()]), ""]
    for kind, (spec, _) in LAYOUTS.items():
        lines += [f"### Layout {kind}", "", f"`kind = \"{kind}\"` in a `[[layout]]` entry.", "",
                  *_table(header, model_rows(spec, only=_own(spec, shared))), ""]
    lines += ["### The filesystem key", "", "`filesystem = { type = \"xfs\", ... }` on a layout that makes one.", "",
              *_table(header, model_rows(FilesystemSpec)), ""]
    lines += ["### The fault key", "", "`fault = { fail = \"/dev/vdc\", ... }` on a layout with redundancy "
              "(docs/faults.md).", "", *_table(header, model_rows(FaultSpec)), ""]
    run_flags, repository_flags = _flags_of("run"), _flags_of("size", "repository")
    lines += ["### The [monitor] table", "", "The monitor's keys, also flags of `run`.", "",
              *_table(("flag of run", *header), model_rows(MonitorOptions, run_flags)), ""]
    lines += ["### The [hosts] table", "", "Other machines the workloads run on instead of layouts "
              "(docs/hosts.md).", "", *_table(("flag of run", *header), model_rows(HostsSpec, run_flags)), ""]
    lines += ["### The [policy] table", "", "A backup policy the recipe's layouts are planned for; also flags of "
              "`size repository` (docs/sizing.md).", "",
              *_table(("flag of size repository", *header), model_rows(PolicyTable, repository_flags)), ""]
    return lines


def _commands(group: click.Group, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def _param_value(param: click.Parameter) -> str:
    if isinstance(param, click.Option) and param.is_flag:
        return ""
    if param.metavar:
        return param.metavar
    if isinstance(param.type, click.Choice):
        return " | ".join(f"`{choice}`" for choice in param.type.choices)
    return param.type.name.upper()


def _unset(value: Any) -> bool:
    return value is None or value is False or value == () or callable(value) or type(value).__name__ == "Sentinel"


def param_row(param: click.Parameter) -> tuple[str, ...]:
    """(option, value, default, description) of a click parameter; a model-made option's
    default is the one its help ends with (cli/options.py puts it there)."""
    help_text = " ".join(((param.help if isinstance(param, click.Option) else "") or "").split())
    found = _DEFAULT_NOTE.search(help_text)
    default = "" if _unset(param.default) else str(param.default)
    if found:
        default, help_text = found.group(1), help_text[:found.start()]
    if isinstance(param, click.Argument):
        return (f"`{param.human_readable_name}`", "argument", default,
                help_text or ("required" if param.required else "optional"))
    names = ", ".join(f"`{opt}`" for opt in [*param.opts, *param.secondary_opts])
    repeatable = param.multiple and "repeatable" not in help_text.lower()
    return (names, _param_value(param), default, help_text + (" Repeatable." if repeatable else ""))


def _shared_option_names() -> dict[str, tuple[frozenset[str], str]]:
    """Commands whose options include a whole model documented above: those rows are left out."""
    workloads = frozenset(name for d in WORKLOADS.values() for name in d.options.model_fields)
    kb2014 = frozenset(WORKLOADS["kb2014"].options.model_fields)
    return {"run": (workloads | frozenset(MonitorOptions.model_fields),
                    "Every workload's options are flags of `run` too ([Workloads](#workloads)), and so are the "
                    "monitor's ([the [monitor] table](#the-monitor-table))."),
            "sweep": (workloads | frozenset(MonitorOptions.model_fields),
                      "Every workload's options and the monitor's are flags of `sweep` too, as of `run`; "
                      "`--over` takes any of the workload's options by name."),
            "export-fio": (kb2014, "The kb2014 workload's options are flags of `export-fio` too "
                                   "([Workload kb2014](#workload-kb2014)).")}


def command_sections() -> list[str]:
    lines = ["## Commands", "", "`backupbench COMMAND --help` says the same; `--debug` anywhere adds a traceback "
             "and the commands run.", ""]
    shared = _shared_option_names()
    for path, command in _commands(app, ()):
        name = " ".join(path)
        left_out, note = shared.get(name, (frozenset(), ""))
        summary = " ".join((command.help or "").strip().split("\n\n")[0].split())
        rows = [param_row(param) for param in command.params
                if not (isinstance(param, click.Option) and param.hidden) and param.name not in left_out]
        lines += [f"### backupbench {name}", "", summary, ""]
        lines += _table(("option", "value", "default", "description"), rows)
        lines += ["", note, ""] if note else [""]
    return lines


def page() -> str:
    """The whole of docs/options.md."""
    body = [HEAD, *workload_sections(), *recipe_sections(), *command_sections()]
    return "\n".join(body).rstrip("\n") + "\n"


def write(path: Path = PAGE) -> bool:
    """Write the page; whether it changed."""
    text = page()
    if path.exists() and path.read_text() == text:
        return False
    path.write_text(text)
    return True


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else PAGE
    print(f"{path}: {'written' if write(path) else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
