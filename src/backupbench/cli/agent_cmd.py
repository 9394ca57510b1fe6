"""backupbench agent: serve this host's monitor samples and run engines for a controller."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from backupbench import stopping


@click.command("agent")
@click.option("--listen", required=True, metavar="ADDR:PORT",
              help="The one address and port to serve on, e.g. 10.0.0.5:7480 ([::1]:7480 for IPv6; port 0 picks "
                   "a free one). Wildcards (0.0.0.0, ::) are refused.")
@click.option("--token-file", required=True, type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="File holding the shared token: yours, a regular file, mode 0600 or stricter.")
@click.option("--root", required=True, type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Folder the small-file jobs work under; no job reaches outside it.")
def agent_command(listen: str, token_file: Path, root: Path) -> None:
    """Serve this host's 1 s monitor samples and run the small-file engine and the S3 load
    generator at a controller's request (POST /v1, Authorization: Bearer TOKEN).

    Runs in the foreground until Ctrl-C or SIGTERM, which stop a running job cleanly first.
    """
    # Imported here: the server pulls in http.server and the engines, which other commands never need.
    from backupbench.agent.server import AgentServer
    from backupbench.agent.startup import check_root, load_token, parse_listen

    address = parse_listen(listen)
    token = load_token(token_file)
    folder = check_root(root)
    try:
        server = AgentServer(address, token, folder)
    except OSError as exc:
        from backupbench.errors import InputError
        raise InputError(f"cannot listen on {listen}: {exc.strerror}",
                         "is the address this host's, and the port free?") from None
    click.echo(f"backupbench agent listening on {server.listening} (root {folder})")
    sys.stdout.flush()
    try:
        server.serve_forever(poll_interval=0.5)
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
