"""docs/options.md is what the option models generate (cli/option_docs.py, `make options`),
as the JSON Schemas are (test_document_schemas.py): an option changed in its model and not in
the reference fails here."""

from __future__ import annotations

import click
import pytest

from backupbench.cli import option_docs
from backupbench.cli.app import app
from backupbench.layouts.registry import LAYOUTS
from backupbench.workloads.registry import WORKLOADS


@pytest.fixture(scope="module")
def page() -> str:
    return option_docs.page()


def test_the_committed_reference_is_what_the_models_generate(page):
    committed = option_docs.PAGE.read_text()
    assert committed == page, "docs/options.md differs from the option models: run `make options`"


def test_writing_twice_changes_nothing_the_second_time(tmp_path):
    path = tmp_path / "options.md"
    assert option_docs.write(path) is True
    assert option_docs.write(path) is False
    assert path.read_text() == option_docs.page()


def _commands(group: click.Group, path: tuple[str, ...] = ()):
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def test_every_command_flag_workload_and_layout_kind_has_its_place(page):
    for path, command in _commands(app):
        assert f"### backupbench {' '.join(path)}\n" in page
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert f"`{param.opts[0]}`" in page, f"{' '.join(path)} {param.opts[0]}"
    for name, definition in WORKLOADS.items():
        assert f"### Workload {name}\n" in page
        for key in definition.recipe_entry.model_fields:
            assert f"| `{key}` |" in page or key == "kind", (name, key)
    for kind, (spec, _) in LAYOUTS.items():
        assert f"### Layout {kind}\n" in page
        for key in spec.model_fields:
            assert f"| `{key}` |" in page or key == "kind", (kind, key)


def test_a_value_reads_as_what_the_user_writes():
    from backupbench.workloads.kb2014 import Kb2014Options
    from backupbench.recipe.policy import PolicyTable
    fields = Kb2014Options.model_fields
    assert option_docs.value_kind(fields["size"].annotation, fields["size"]) == "size"
    assert option_docs.default_text(fields["size"]) == "1GiB"
    assert option_docs.default_text(fields["runtime"]) == "10s"
    assert option_docs.value_kind(fields["operations"].annotation, fields["operations"]).startswith("list of `active-full`")
    assert option_docs.default_text(PolicyTable.model_fields["window"]) == "8h"
    assert option_docs.default_text(PolicyTable.model_fields["protected"]) == "required"
