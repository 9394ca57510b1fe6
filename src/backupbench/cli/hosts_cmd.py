"""`backupbench hosts`: the fio servers `run --hosts` drives (check them; print a unit to start one), and
the unit of the agent that gives each host's samples."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path, PurePosixPath

import click
from rich.table import Table

from backupbench import __version__
from backupbench.agent.client import AgentClient
from backupbench.cli.agent_flags import TrustFlags, agent_trust_options
from backupbench.cli.common import print_document, stdout
from backupbench.agent.startup import parse_listen
from backupbench.recipe.hosts import AGENT_PORT
from backupbench.agent.tls import MAKE_CERT
from backupbench.engines import fio_client
from backupbench.engines.fio import FioEngine
from backupbench.errors import BackupbenchError, EngineError, InputError, RefusedError
from backupbench.runner import host_monitor


@click.group("hosts")
def hosts_command() -> None:
    """fio servers for `backupbench run --hosts H1,H2 PATH` (fio's client/server mode), and their agents."""


@hosts_command.command("check")
@click.argument("hosts")
@click.option("--json", "as_json", is_flag=True, help="Print one object per host as JSON.")
@click.option("--agent-token-file", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Also check each host's `backupbench agent` (reachable over TLS as trusted, taking this token, "
                   "this version), as run --hosts --agent-token-file does before it starts.")
@click.option("--agent-port", type=click.IntRange(1, 65535), default=None, metavar="PORT",
              help=f"With --agent-token-file: the port of each host's agent [default: {AGENT_PORT}].")
@agent_trust_options
def check_command(hosts: str, as_json: bool, agent_token_file: Path | None, agent_port: int | None,
                  agent_trust: TrustFlags) -> None:
    """Whether each of HOSTS (ADDR or ADDR:PORT, comma-separated; port 8765 by default) runs a
    fio server this machine can reach, and its fio version; with --agent-token-file, its agent
    too. Exit 3 when one does not."""
    stray = "--agent-port" if agent_port is not None else agent_trust.given
    if stray and agent_token_file is None:
        raise InputError(f"{stray} applies with --agent-token-file", "drop it, or give the agents' token file")
    host_list = fio_client.parse_hosts(hosts)
    clients = host_monitor.host_agents(host_list, agent_token_file, agent_port or AGENT_PORT,
                                       agent_trust.trust()) if agent_token_file else {}
    local = FioEngine().version()
    rows = [_fio_row(host, local) for host in host_list]
    agents = [_agent_row(name, client) for name, client in clients.items()]
    if as_json:
        print_document("hosts.check", {"client_fio": local, "hosts": rows, **({"agents": agents} if clients else {})})
    else:
        stdout.print(_table(rows, local))
        if clients:
            stdout.print(_agents_table(agents))
    _refuse_unusable([row["host"] for row in rows if row["problem"]],
                     [f"{row['host']} ({row['problem']})" for row in agents if row["problem"]])


def _refuse_unusable(servers: list[str], agents: list[str]) -> None:
    said = ([f"not usable: {', '.join(servers)}"] if servers else []) + (
        [f"agents not usable: {'; '.join(agents)}"] if agents else [])
    fixes = (["start `fio --server=ip:ADDR,PORT` (IPv6: `fio --server=ip6:ADDR,PORT`) there (backupbench hosts unit "
              "ADDR prints a systemd unit)"] if servers else []) + (
        ["start `backupbench agent` there (backupbench hosts agent-unit ADDR prints a systemd unit) and trust it "
         "(--agent-ca or --agent-fingerprint)"] if agents else [])
    if said:
        raise RefusedError("; ".join(said), "; ".join(fixes))


def _fio_row(host: fio_client.Host, local: str) -> dict:
    try:
        info = fio_client.probe(host)
    except EngineError as exc:
        return {"host": host.name, "reachable": False, "fio": "", "server_hostname": "", "problem": exc.message}
    problem = "" if info.fio_version == local else f"runs {info.fio_version}, this client {local}"
    return {"host": host.name, "reachable": True, "fio": info.fio_version, "server_hostname": info.server_hostname,
            "problem": problem}


def _agent_row(name: str, client: AgentClient) -> dict:
    try:
        version = str(client.hello().get("version", "?"))
    except BackupbenchError as exc:
        return {"host": name, "agent": client.address, "reachable": False, "version": "", "problem": exc.message}
    problem = "" if version == __version__ else f"runs backupbench {version}, this is {__version__}"
    return {"host": name, "agent": client.address, "reachable": True, "version": version, "problem": problem}


def _agents_table(rows: list[dict]) -> Table:
    table = Table(title=f"backupbench agents (this controller: {__version__})")
    for column in ("host", "agent", "reachable", "version", "problem"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["host"], row["agent"], "yes" if row["reachable"] else "no", row["version"], row["problem"])
    return table


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
# requests carrying the token in {token_file} (mode 0600, owned by {user}), on {address}:{port},
# {transport}
# Install: save as /etc/systemd/system/backupbench-agent.service, then
#   systemctl daemon-reload && systemctl enable --now backupbench-agent
[Unit]
Description=backupbench agent on {address}:{port}
Wants=network-online.target
After=network-online.target

[Service]
ExecStart={backupbench} agent --listen {address}:{port} --token-file {token_file} --root {root}{tls_args}
# Restarted after a crash: the controller reads its samples again from the restart on.
Restart=always
RestartSec=2
User={user}

[Install]
WantedBy=multi-user.target
"""

TLS_NOTE = """over TLS:
#   certificate {cert}, key {key} (readable by {user} only).
# A self-signed certificate for this address, and the fingerprint controllers then pin with
# --agent-fingerprint (the agent also prints it when it starts: journalctl -u backupbench-agent):
#   {make}
#   openssl x509 -in {cert} -noout -fingerprint -sha256
# Or have your CA sign one naming IP:{address}, and give controllers --agent-ca CA_FILE."""
PLAIN_NOTE = """over PLAIN HTTP (--insecure-plain-http): the token and the S3 keys cross
# the network in clear; controllers must say --agent-insecure-plain-http."""


def _backupbench() -> str:
    # This installation's own entry point when it is not on PATH (a virtualenv).
    return shutil.which("backupbench") or str(Path(sys.executable).parent / "backupbench")


def agent_unit(address: str, port: int, token_file: str, root: str, backupbench: str, user: str,
               tls: tuple[str, str] | None) -> str:
    """The unit; `tls` is (certificate, key), None for plain HTTP."""
    if tls is None:
        transport, tls_args = PLAIN_NOTE, " --insecure-plain-http"
    else:
        cert, key = tls
        transport = TLS_NOTE.format(cert=cert, key=key, user=user, address=address,
                                    make=MAKE_CERT.format(address=address, key=key, cert=cert))
        tls_args = f" --tls-cert {cert} --tls-key {key}"
    return AGENT_UNIT.format(address=address, port=port, token_file=token_file, root=root, backupbench=backupbench,
                             user=user, transport=transport, tls_args=tls_args)


@hosts_command.command("agent-unit")
@click.argument("address")
@click.option("--port", type=click.IntRange(1, 65535), default=AGENT_PORT, show_default=True,
              help="What run --hosts looks for unless given --agent-port.")
@click.option("--token-file", required=True, metavar="FILE", help="The token file on that host (absolute).")
@click.option("--root", required=True, metavar="DIR", help="Folder the agent's small-file jobs work under (absolute).")
@click.option("--tls-cert", metavar="FILE", default=None, help="The agent's TLS certificate on that host (absolute).")
@click.option("--tls-key", metavar="FILE", default=None, help="Its key on that host (absolute).")
@click.option("--insecure-plain-http", "plain", is_flag=True,
              help="A unit serving plain HTTP instead of TLS (the token then crosses the network in clear).")
@click.option("--user", default="root", show_default=True, help="Who runs the agent: owns the token file.")
def agent_unit_command(address: str, port: int, token_file: str, root: str, tls_cert: str | None,
                       tls_key: str | None, plain: bool, user: str) -> None:
    """Print a systemd unit that runs `backupbench agent` bound to ADDRESS (this host's address
    on the test network) on the host it is installed on, serving TLS."""
    parse_listen(f"{address}:{port}")
    if plain and (tls_cert or tls_key):
        raise InputError("--insecure-plain-http and --tls-cert/--tls-key do not go together", "choose one")
    if not plain and not (tls_cert and tls_key):
        raise InputError("the agent's unit needs --tls-cert FILE and --tls-key FILE (paths on that host)",
                         "give both (the unit's comments say how to make them), or --insecure-plain-http")
    for flag, value in (("--token-file", token_file), ("--root", root), ("--tls-cert", tls_cert),
                        ("--tls-key", tls_key)):
        if value is not None and not PurePosixPath(value).is_absolute():
            raise InputError(f"{flag} {value!r} must be absolute: systemd starts the agent in /")
    tls = None if plain else (str(tls_cert), str(tls_key))
    click.echo(agent_unit(address, port, token_file, root, _backupbench(), user, tls), nl=False)
