"""backupbench agent: serve this host's monitor samples and run engines for a controller."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from backupbench import stopping
from backupbench.errors import InputError


def _transport(tls_cert: Path | None, tls_key: Path | None, plain: bool) -> tuple[object, str]:
    """The TLS context (None: plain HTTP) and how the start line describes it."""
    from backupbench.agent.tls import server_context

    if plain:
        if tls_cert is not None or tls_key is not None:
            raise InputError("--insecure-plain-http and --tls-cert/--tls-key do not go together", "choose one")
        return None, "PLAIN HTTP: the token and S3 keys cross the network in clear"
    if tls_cert is None or tls_key is None:
        raise InputError("the agent needs --tls-cert FILE and --tls-key FILE (the token and S3 keys must not "
                         "cross the network in clear)",
                         "give both, or --insecure-plain-http on a network where that is acceptable")
    context, fingerprint = server_context(tls_cert, tls_key)
    return context, f"TLS, certificate {fingerprint}"


@click.command("agent")
@click.option("--listen", required=True, metavar="ADDR:PORT",
              help="The one address and port to serve on, e.g. 10.0.0.5:7480 ([::1]:7480 for IPv6; port 0 picks "
                   "a free one). Wildcards (0.0.0.0, ::, ::ffff:0.0.0.0) are refused.")
@click.option("--token-file", required=True, type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="File holding the shared token: yours, a regular file, mode 0600 or stricter.")
@click.option("--root", required=True, metavar="DIR",
              help="Folder the small-file jobs work under (absolute); no job reaches outside it.")
@click.option("--tls-cert", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="PEM certificate to serve TLS with (its SHA-256 fingerprint is printed at the start, for "
                   "controllers' --agent-fingerprint).")
@click.option("--tls-key", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="The certificate's unencrypted PEM key (not readable by every user).")
@click.option("--insecure-plain-http", "plain", is_flag=True,
              help="Serve plain HTTP instead of TLS: the token and the S3 keys then cross the network in clear. "
                   "Controllers must say --agent-insecure-plain-http too.")
def agent_command(listen: str, token_file: Path, root: str, tls_cert: Path | None, tls_key: Path | None,
                  plain: bool) -> None:
    """Serve this host's 1 s monitor samples and run the small-file engine and the S3 load
    generator at a controller's request (POST /v1 over TLS, Authorization: Bearer TOKEN).

    Runs in the foreground until Ctrl-C or SIGTERM, which stop a running job cleanly first.
    """
    # Imported here: the server pulls in the engines, which other commands never need.
    from backupbench.agent.server import AgentServer
    from backupbench.agent.startup import check_root, load_token, parse_listen

    address = parse_listen(listen)
    token = load_token(token_file)
    folder = check_root(root)
    context, described = _transport(tls_cert, tls_key, plain)
    try:
        server = AgentServer(address, token, folder, context)  # type: ignore[arg-type]
    except OSError as exc:
        raise InputError(f"cannot listen on {listen}: {exc.strerror}",
                         "is the address this host's, and the port free?") from None
    click.echo(f"backupbench agent listening on {server.listening} ({described}; root {folder})")
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass  # SIGINT or SIGTERM: how an agent is meant to end
    finally:
        # Held: a second signal must not cut the job's cleanup short.
        with stopping.held():
            stopped = server.close()
    if stopping.requested() is not None:
        click.echo(f"backupbench agent stopped ({stopping.signal_name(stopping.requested())})"
                   + ("" if stopped else "; the running job did not stop in time"))
        stopping.reset()  # a stop signal is the agent's normal end: exit 0
