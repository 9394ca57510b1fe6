"""The flags saying how a controller trusts the agents it calls (agent/tls.py), shared by
`run` and `hosts check`: one of --agent-ca, --agent-fingerprint (repeatable: one per agent's
certificate), --agent-insecure-plain-http; none means the system's CA store."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import click

from backupbench.agent.tls import Trust


@dataclass(frozen=True)
class TrustFlags:
    ca: Path | None = None
    fingerprints: tuple[str, ...] = ()
    plain: bool = False

    @property
    def given(self) -> str:
        """The first flag given, or ''."""
        return next((name for name, value in zip(("--agent-ca", "--agent-fingerprint", "--agent-insecure-plain-http"),
                                                 (self.ca, self.fingerprints, self.plain)) if value), "")

    def trust(self) -> Trust:
        return Trust.choose(self.ca, self.fingerprints, self.plain)


_OPTIONS = (
    click.option("--agent-ca", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
                 help="Trust only agents whose TLS certificate this CA file (PEM: a CA, or the agents' own "
                      "certificates) vouches for, and that name the address they are called at "
                      "[default: the system's CA store]."),
    click.option("--agent-fingerprint", multiple=True, metavar="sha256:HEX",
                 help="Trust only agents presenting a certificate with this SHA-256 fingerprint (each agent prints "
                      "its own when it starts); give it once per agent certificate."),
    click.option("--agent-insecure-plain-http", is_flag=True,
                 help="Call the agents over plain HTTP (they must be started with --insecure-plain-http): the token "
                      "and S3 keys then cross the network in clear."),
)


def agent_trust_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The three flags, handed to `command` as one `agent_trust: TrustFlags`."""
    @functools.wraps(command)
    def with_trust(*args: Any, agent_ca: Path | None = None, agent_fingerprint: tuple[str, ...] = (),
                   agent_insecure_plain_http: bool = False, **kwargs: Any) -> Any:
        flags = TrustFlags(agent_ca, tuple(agent_fingerprint), agent_insecure_plain_http)
        return command(*args, agent_trust=flags, **kwargs)
    for option in reversed(_OPTIONS):
        with_trust = option(with_trust)
    return with_trust
