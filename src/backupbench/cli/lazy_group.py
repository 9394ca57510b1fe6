"""A click group whose sub-commands are imported when named, not when the program starts.

Each command module pulls in what only it needs (the lab's options, the sizing models, the
agent's server); `backupbench run` need not pay for `lab`. Under the lab's TCG every import
costs about 30x the host's, and the tests start the CLI hundreds of times. `--help` still
lists every command: listing imports them all.
"""

from __future__ import annotations

from importlib import import_module

import click


class LazyGroup(click.Group):
    def __init__(self, *args, lazy_commands: dict[str, str], **kwargs) -> None:
        """lazy_commands: {name: "module:attribute"} of the commands imported on first use."""
        super().__init__(*args, **kwargs)
        self.lazy_commands = lazy_commands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands and cmd_name not in self.commands:
            module, attribute = self.lazy_commands[cmd_name].split(":")
            command = vars(import_module(module))[attribute]  # a missing one is a bug: KeyError
            if command.name != cmd_name:
                raise RuntimeError(f"{module}:{attribute} is the command {command.name!r}, not {cmd_name!r}")
            self.add_command(command)
        return super().get_command(ctx, cmd_name)
