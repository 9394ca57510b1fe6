"""`backupbench hosts`: the fio servers `run --hosts` drives (check them; print a unit to start one), and
the unit of the agent that gives each host's samples."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path, PurePosixPath

import click
from rich.table import Table

from backupbench.cli.common import print_document, stdout
from backupbench.agent.startup import DEFAULT_AGENT_PORT, parse_listen
from backupbench.engines import fio_client
from backupbench.engines.fio import FioEngine
from backupbench.errors import EngineError, InputError, RefusedError


@click.group("hosts")
def hosts_command() -> None:
    """fio servers for `backupbench run --hosts H1,H2 PATH` (fio's client/server mode)."""


@hosts_command.command("check")
@click.argument("hosts")
@click.option("--json", "as_json", is_flag=True, help="Print one object per host as JSON.")
def check_command(hosts: str, as_json: bool) -> None:
    """Whether each of HOSTS (ADDR or ADDR:PORT, comma-separated; port 8765 by default) runs a
    fio server this machine can reach, and its fio version. Exit 3 when one does not."""
    local = FioEngine().version()
    rows = []
    for host in fio_client.parse_hosts(hosts):
        try:
            info = fio_client.probe(host)
        except EngineError as exc:
            rows.append({"host": host.name, "reachable": False, "fio": "", "server_hostname": "",
                         "problem": exc.message})
            continue
        problem = "" if info.fio_version == local else f"runs {info.fio_version}, this client {local}"
        rows.append({"host": host.name, "reachable": True, "fio": info.fio_version,
                     "server_hostname": info.server_hostname, "problem": problem})
    if as_json:
        print_document("hosts.check", {"client_fio": local, "hosts": rows})
    else:
        stdout.print(_table(rows, local))
    bad = [row["host"] for row in rows if row["problem"]]
    if bad:
        raise RefusedError(f"not usable: {', '.join(bad)}",
                           "start `fio --server=ip:ADDR,PORT` (IPv6: `fio --server=ip6:ADDR,PORT`) there "
                           "(backupbench hosts unit ADDR prints a systemd unit)")


def _table(rows: list[dict], local: str) -> Table:
    table = Table(title=f"fio servers (this client: {local})")
    for column in ("host", "reachable", "fio", "server hostname", "problem"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["host"], "yes" if row["reachable"] else "no", row["fio"], row["server_hostname"],
                      row["problem"])
    return table


UNIT = """\
# backupbench: a fio server for `backupbench run --hosts {name} PATH`.
# fio's server has no authentication: whoever reaches {address}:{port} can make it read and
# write any file as {user}. Bind it to an address only the test network reaches.
# Install: save as /etc/systemd/system/fio-server.service, then
#   systemctl daemon-reload && systemctl enable --now fio-server
[Unit]
Description=fio server for backupbench on {address}:{port}
Wants=network-online.target
After=network-online.target

[Service]
ExecStart={fio} {server_arg}
# Restarted after a crash: a host lost mid-run is then back for the run's cleanup job.
Restart=always
RestartSec=2
User={user}

[Install]
WantedBy=multi-user.target
"""


def server_unit(host: fio_client.Host, fio: str, user: str) -> str:
    return UNIT.format(name=host.name, address=host.address, port=host.port, fio=fio, user=user,
                       server_arg=host.server_arg)


@hosts_command.command("unit")
@click.argument("address")
@click.option("--port", type=click.IntRange(1, 65535), default=fio_client.DEFAULT_PORT, show_default=True)
@click.option("--user", default="root", show_default=True,
              help="Who runs fio's jobs: needs write access to PATH (and O_DIRECT there).")
def unit_command(address: str, port: int, user: str) -> None:
    """Print a systemd unit that runs `fio --server` bound to ADDRESS (this host's address on
    the test network) on the host it is installed on."""
    hosts = fio_client.parse_hosts(address)
    if len(hosts) != 1 or "]:" in address or (":" in address and not hosts[0].ipv6):
        raise InputError("hosts unit takes one ADDRESS; give the port with --port")
    host = fio_client.Host(hosts[0].address, port)
    click.echo(server_unit(host, shutil.which("fio") or "/usr/bin/fio", user), nl=False)


AGENT_UNIT = """\
# backupbench: the agent that serves this host's 1 s monitor samples to `backupbench run --hosts
# ... --agent-token-file F` (a per-host timeline) and runs --agents jobs. It answers only
# requests carrying the token in {token_file} (mode 0600, owned by {user}), on {address}:{port}.
# Install: save as /etc/systemd/system/backupbench-agent.service, then
#   systemctl daemon-reload && systemctl enable --now backupbench-agent
[Unit]
Description=backupbench agent on {address}:{port}
Wants=network-online.target
After=network-online.target

[Service]
ExecStart={backupbench} agent --listen {address}:{port} --token-file {token_file} --root {root}
# Restarted after a crash: the controller reads its samples again from the restart on.
Restart=always
RestartSec=2
User={user}

[Install]
WantedBy=multi-user.target
"""


def _backupbench() -> str:
    # This installation's own entry point when it is not on PATH (a virtualenv).
    return shutil.which("backupbench") or str(Path(sys.executable).parent / "backupbench")


def agent_unit(address: str, port: int, token_file: str, root: str, backupbench: str, user: str) -> str:
    return AGENT_UNIT.format(address=address, port=port, token_file=token_file, root=root, backupbench=backupbench,
                             user=user)


@hosts_command.command("agent-unit")
@click.argument("address")
@click.option("--port", type=click.IntRange(1, 65535), default=DEFAULT_AGENT_PORT, show_default=True,
              help="What run --hosts looks for unless given --agent-port.")
@click.option("--token-file", required=True, metavar="FILE", help="The token file on that host (absolute).")
@click.option("--root", required=True, metavar="DIR", help="Folder the agent's small-file jobs work under (absolute).")
@click.option("--user", default="root", show_default=True, help="Who runs the agent: owns the token file.")
def agent_unit_command(address: str, port: int, token_file: str, root: str, user: str) -> None:
    """Print a systemd unit that runs `backupbench agent` bound to ADDRESS (this host's address
    on the test network) on the host it is installed on."""
    parse_listen(f"{address}:{port}")
    for flag, value in (("--token-file", token_file), ("--root", root)):
        if not PurePosixPath(value).is_absolute():
            raise InputError(f"{flag} {value!r} must be absolute: systemd starts the agent in /")
    click.echo(agent_unit(address, port, token_file, root, _backupbench(), user), nl=False)
