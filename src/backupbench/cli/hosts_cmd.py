"""`backupbench hosts`: the fio servers `run --hosts` drives (check them; print a unit to start one)."""

from __future__ import annotations

import shutil

import click
from rich.table import Table

from backupbench.cli.common import print_json, stdout
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
        print_json({"client_fio": local, "hosts": rows})
    else:
        stdout.print(_table(rows, local))
    bad = [row["host"] for row in rows if row["problem"]]
    if bad:
        raise RefusedError(f"not usable: {', '.join(bad)}",
                           "start `fio --server=ip:ADDR,PORT` there (backupbench hosts unit prints a systemd unit)")


def _table(rows: list[dict], local: str) -> Table:
    table = Table(title=f"fio servers (this client: {local})")
    for column in ("host", "reachable", "fio", "server hostname", "problem"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["host"], "yes" if row["reachable"] else "no", row["fio"], row["server_hostname"],
                      row["problem"])
    return table


UNIT = """\
# backupbench: a fio server for `backupbench run --hosts {address}{port_suffix} PATH`.
# fio's server has no authentication: whoever reaches {address}:{port} can make it read and
# write any file as {user}. Bind it to an address only the test network reaches.
# Install: save as /etc/systemd/system/fio-server.service, then
#   systemctl daemon-reload && systemctl enable --now fio-server
[Unit]
Description=fio server for backupbench on {address}:{port}
Wants=network-online.target
After=network-online.target

[Service]
ExecStart={fio} --server=ip:{address},{port}
# Restarted after a crash: a host lost mid-run is then back for the run's cleanup job.
Restart=always
RestartSec=2
User={user}

[Install]
WantedBy=multi-user.target
"""


def server_unit(address: str, port: int, fio: str, user: str) -> str:
    return UNIT.format(address=address, port=port, fio=fio, user=user,
                       port_suffix="" if port == fio_client.DEFAULT_PORT else f":{port}")


@hosts_command.command("unit")
@click.argument("address")
@click.option("--port", type=click.IntRange(1, 65535), default=fio_client.DEFAULT_PORT, show_default=True)
@click.option("--user", default="root", show_default=True,
              help="Who runs fio's jobs: needs write access to PATH (and O_DIRECT there).")
def unit_command(address: str, port: int, user: str) -> None:
    """Print a systemd unit that runs `fio --server` bound to ADDRESS (this host's address on
    the test network) on the host it is installed on."""
    host = fio_client.parse_hosts(address)
    if len(host) != 1 or ":" in address:
        raise InputError("hosts unit takes one ADDRESS; give the port with --port")
    click.echo(server_unit(address, port, shutil.which("fio") or "/usr/bin/fio", user), nl=False)
