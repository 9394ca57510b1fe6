"""Every `backupbench` command README.md and docs/*.md show is one the command line takes, and
is either run for real by a test or marked as needing the lab VM or other machines
(tests/doc_commands_support.py says what counts as a command; docs/development.md, "Commands
in the docs", says it for readers). Each docs page starts with a runnable example."""

from __future__ import annotations

import re

import click
import pytest
from doc_commands_support import (MARKERS, ROOT, DocCommand, RUN_ELSEWHERE, RUN_HERE, all_commands, commands_in,
                                  doc_files, listed)

from backupbench.analysis.options import ShowOptions
from backupbench.cli import options as cli_options
from backupbench.cli.app import app
from backupbench.errors import BackupbenchError
from backupbench.lab.options import LabOptions
from backupbench.monitor.options import MonitorOptions
from backupbench.plan import PlanOptions
from backupbench.recipe import model as recipe_model
from backupbench.sizing.options import CapacityOptions, RebuildOptions, SnapshotOptions, WindowOptions
from backupbench.sizing.policy import RepositoryOptions
from backupbench.workloads.kb2014 import Kb2014Options

COMMANDS = all_commands()
# The model behind each command's option flags (cli/options.click_options), validated as the
# command would: a value click passes as text (a size, a duration) is checked here.
MODELS = {"size capacity": CapacityOptions, "size rebuild": RebuildOptions, "size snapshot": SnapshotOptions,
          "size window": WindowOptions, "size repository": RepositoryOptions, "lab": LabOptions,
          "show": ShowOptions, "report": ShowOptions, "export-fio": Kb2014Options, "plan": PlanOptions,
          "apply": PlanOptions}


def parse(argv: tuple[str, ...]) -> tuple[str, click.Context] | None:
    """The command's name and its context, as backupbench's own command line parses it; None
    for --help (click prints the help and exits 0)."""
    command: click.Command = app
    context, names, args = None, [], list(argv)
    while isinstance(command, click.Group):
        assert args, "names no command"
        context = click.Context(command, info_name=" ".join(names) or "backupbench", parent=context)
        name = args.pop(0)
        found = command.get_command(context, name)
        assert found is not None, f"backupbench has no command {' '.join([*names, name])!r}"
        command, names = found, [*names, name]
    try:
        return " ".join(names), command.make_context(" ".join(names), args, parent=context)
    except click.exceptions.Exit as exit_:
        assert exit_.exit_code == 0
        return None


def validate(name: str, params: dict) -> None:
    """The option values, through the models the command builds from them."""
    if name == "run":
        from backupbench.cli.run_cmd import _workload_options
        from backupbench.workloads.registry import WORKLOADS
        _workload_options(WORKLOADS[params["workload"]], params["preset"], params)
        cli_options.build(MonitorOptions, params)
    elif name == "size repository" and params.get("recipe"):  # the recipe's [policy] under the flags
        from backupbench.cli.repository_cmd import _from_recipe
        _from_recipe(params)
    elif name in MODELS:
        cli_options.build(MODELS[name], params)
    for value in params.values():
        for text in value if isinstance(value, tuple) else (value,):
            if isinstance(text, str) and text.startswith("examples/") and text.endswith(".toml"):
                recipe_model.load(ROOT / text)


def test_the_pages_show_commands_and_the_scan_finds_them():
    assert len(COMMANDS) > 40
    assert {command.path.name for command in COMMANDS} >= {"README.md", "workloads.md", "sizing.md", "s3.md"}


@pytest.mark.parametrize("command", COMMANDS, ids=lambda command: command.where)
def test_every_command_is_one_the_command_line_takes(command: DocCommand):
    parsed = parse(command.argv)
    if parsed is None:
        return
    name, context = parsed
    try:
        validate(name, context.params)
    except BackupbenchError as error:
        pytest.fail(f"{command.where}: {command.text}: {error.message}")


def test_every_command_is_run_by_a_test_or_marked():
    runs = listed()
    unchecked = [f"{command.where}: {command.text}" for command in COMMANDS
                 if not command.marker and command.text not in runs]
    assert unchecked == [], ("run these in tests/doc_commands_support.py (RUN_HERE, or RUN_ELSEWHERE naming the "
                             f"test), or mark them `# lab` / `# hosts` if that is what they need: {unchecked}")


def test_the_list_holds_only_commands_the_pages_show():
    shown = {command.text for command in COMMANDS}
    gone = sorted(set(listed()) - shown)
    assert gone == [], f"no page shows these any more: drop them from tests/doc_commands_support.py: {gone}"
    assert len(RUN_HERE) == len({real.command for real in RUN_HERE})


def test_each_test_named_as_running_a_command_exists():
    for command, test in RUN_ELSEWHERE.items():
        path, function = test.split("::")
        assert re.search(rf"^def {function}\(", (ROOT / path).read_text(), flags=re.M), f"{command}: {test}"


def test_markers_are_the_defined_ones_and_few():
    marked = [command for command in COMMANDS if command.marker]
    assert {command.marker for command in marked} <= set(MARKERS)
    assert len(marked) < len(COMMANDS) / 3


@pytest.mark.parametrize("path", [path for path in doc_files() if path.name not in ("README.md", "architecture.md")],
                         ids=lambda path: path.name)
def test_each_docs_page_starts_with_a_runnable_example(path):
    text = path.read_text()
    first_fence = re.search(r"^```(\S*)", text, flags=re.M)
    first_section = re.search(r"^## ", text, flags=re.M)
    assert first_fence and first_fence.group(1) == "sh", f"{path.name}: its first block is not a sh example"
    assert first_section is None or first_fence.start() < first_section.start(), path.name


def test_the_scan_reads_prompts_continuations_pipes_and_markers(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text `backupbench run` inline is not a command\n"
                    "```sh\n"
                    "backupbench export --prometheus | curl --data-binary @- http://x\n"
                    "backupbench run /srv --size 1GiB \\\n"
                    "    --runtime 5s   # lab: formats it\n"
                    "make run\n"
                    "python3.10 backupbench-cp310.pex run /srv > out.txt\n"
                    "```\n"
                    "```\n"
                    "$ backupbench show latest --expect 'a>=1MiB/s # not a comment'\n"
                    "backupbench: this line is output\n"
                    "```\n")
    found = [(command.text, command.marker, command.line) for command in commands_in(page)]
    assert found == [("backupbench export --prometheus", "", 3),
                     ("backupbench run /srv --size 1GiB --runtime 5s", "lab", 4),
                     ("python3.10 backupbench-cp310.pex run /srv", "", 7),
                     ("backupbench show latest --expect 'a>=1MiB/s # not a comment'", "", 10)]
    assert commands_in(page)[3].argv == ("show", "latest", "--expect", "a>=1MiB/s # not a comment")


def _anchors(text: str) -> set[str]:
    """The anchors GitHub makes of a page's headings: lower case, punctuation dropped, spaces
    to hyphens, a repeated one numbered."""
    seen: dict[str, int] = {}
    anchors = set()
    in_block = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_block = not in_block
        heading = re.match(r"^#{1,6} (.+)$", line)
        if heading and not in_block:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def test_links_between_the_pages_resolve():
    broken = []
    for path in doc_files():
        for target, anchor in re.findall(r"\]\(((?:docs/)?[\w.-]*\.md)?(?:#([\w-]+))?\)", path.read_text()):
            if not target and not anchor:
                continue
            page = (path.parent / target) if target else path
            if not page.is_file():
                broken.append(f"{path.name}: {target}")
            elif anchor and anchor not in _anchors(page.read_text()):
                broken.append(f"{path.name}: {target}#{anchor}")
    assert broken == []
