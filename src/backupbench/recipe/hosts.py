"""A recipe's [hosts] table: workloads run on other machines, as `run --hosts` / `run --agents` do.

backupbench builds no storage on another machine, so a recipe with [hosts] has no [[layout]]:
each workload runs where the table says and its Definition's capabilities allow: one that runs
on fio servers (kb2014, first-write) on those of `names` (in `path` on every host), one that
runs from agents (s3) from the backupbench agents of `agents`. Host names and the path
are checked here by the same functions as the flags, so a recipe gets the flag's message.

`agent_token_file` serves both kinds of machine, as --agent-token-file does: the s3 workload's
`agents` take it, and with `names` each fio host's own agent (at the host's address, port
`agent_port`) is checked before the start and sampled during kb2014 and first-write, as
`run --hosts H --agent-token-file F [--agent-port P]` does: the run's per-host timeline.

How the agents are trusted (agent/tls.py) is one of agent_ca, agent_fingerprints and
agent_insecure_plain_http, as --agent-ca, --agent-fingerprint and --agent-insecure-plain-http;
none: the system's CA store. A fingerprint's form, like an agent's address, cannot be checked
here: their parsers (agent/tls.py, runner/agents.parse_agents) belong to a later stage than the
recipe. `plan` and `apply` check both before anything starts
(runner/apply_hosts.refusals), with the messages the flags give.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from backupbench.engines.fio_client import Host, parse_hosts, remote_path
from backupbench.errors import InputError
from backupbench.schema import FilePath
from backupbench.workloads.registry import WORKLOADS, names_where
# Longer than any host name (253) or ADDR:PORT; a longer value is a mistake, not an address.
MAX_ADDRESS_CHARS = 300
# Where a controller looks for a host's agent when it names only the host ([hosts] names
# without agent_port, run --hosts without --agent-port); `hosts agent-unit` listens there. A
# controller's default, not the agent's: `backupbench agent --listen` always names its port.
AGENT_PORT = 7480


def _flag_message(exc: InputError, flag: str) -> str:
    """The flag's message, less the flag's name where the key path already says where."""
    return exc.message.removeprefix(f"{flag}: ").removeprefix(f"{flag} ")


def _one_host(text: str) -> str:
    try:
        found = parse_hosts(text)
    except InputError as exc:
        raise ValueError(_flag_message(exc, "--hosts")) from None
    if len(found) != 1:
        raise ValueError(f"{text!r} names {len(found)} hosts; give one per entry, e.g. [\"10.0.0.5\", \"10.0.0.6\"]")
    return text.strip()


def _remote_directory(text: str) -> str:
    try:
        return str(remote_path(text))
    except InputError as exc:  # PathRefused too: a path a fio job file cannot say
        raise ValueError(exc.message) from None


def _one_agent(text: str) -> str:
    if "," in text:
        raise ValueError(f"{text!r} names several agents; give one ADDR:PORT per entry")
    return text.strip()


HostName = Annotated[str, Field(max_length=MAX_ADDRESS_CHARS), AfterValidator(_one_host)]
AgentAddress = Annotated[str, Field(min_length=1, max_length=MAX_ADDRESS_CHARS), AfterValidator(_one_agent)]


class HostsSpec(BaseModel):
    """The [hosts] table: where a recipe's workloads run when not on storage built here."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    names: tuple[HostName, ...] = Field(
        (), max_length=256,
        description="Hosts running `fio --server` (ADDR or ADDR:PORT, port 8765 by default), as --hosts: "
                    "kb2014 and first-write run on all of them at once.")
    path: Annotated[str, Field(max_length=4096), AfterValidator(_remote_directory)] | None = Field(
        None, description="The directory to test on every host (absolute, as the hosts see it), as run's PATH.")
    agents: tuple[AgentAddress, ...] = Field(
        (), max_length=256,
        description="backupbench agents (ADDR:PORT), as --agents: an s3 workload runs from all of them at once.")
    agent_token_file: FilePath | None = Field(
        None, description="File (absolute path, on this machine) holding the agents' token, as --agent-token-file: "
                          "needed with agents; with names, each host's own `backupbench agent` is then checked "
                          "before the start and its 1 s samples fetched (a per-host timeline).")
    agent_ca: FilePath | None = Field(
        None, description="With agent_token_file: trust only agents whose TLS certificate this CA file (absolute path, "
                          "on this machine; a CA or the agents' own certificates) vouches for, as --agent-ca "
                          "[default: the system's CA store].")
    agent_fingerprints: tuple[Annotated[str, Field(max_length=200)], ...] = Field(
        (), max_length=256,
        description="With agent_token_file: trust only agents presenting a certificate with one of these SHA-256 "
                    "fingerprints (sha256:HEX, each agent prints its own when it starts), as --agent-fingerprint.")
    agent_insecure_plain_http: Annotated[bool, Field(strict=True)] = Field(
        False, description="With agent_token_file: call the agents over plain HTTP (started with --insecure-plain-http), "
                           "as --agent-insecure-plain-http: the token and S3 keys then cross the network in clear.")
    agent_port: Annotated[int, Field(strict=True, ge=1, le=65535)] | None = Field(
        None, description=f"With names and agent_token_file: the port of each host's agent, as --agent-port "
                          f"({AGENT_PORT} when not given).")

    @model_validator(mode="after")
    def _consistent(self) -> "HostsSpec":
        if not self.names and not self.agents:
            raise ValueError("[hosts] needs names (fio servers) or agents (backupbench agents), or both")
        if self.names:
            try:
                parse_hosts(",".join(self.names))  # the same host written twice (10.0.0.5, 10.0.0.5:8765)
            except InputError as exc:
                raise ValueError(_flag_message(exc, "--hosts")) from None
        if self.names and self.path is None:
            raise ValueError("[hosts] with names needs path: the directory to test on every host")
        if self.agents and self.agent_token_file is None:
            raise ValueError("[hosts] with agents needs agent_token_file: the token the agents were started with")
        trust = [key for key in ("agent_ca", "agent_fingerprints", "agent_insecure_plain_http") if getattr(self, key)]
        if trust and self.agent_token_file is None:
            raise ValueError(f"{trust[0]} applies with agent_token_file (how the agents it reaches are trusted)")
        if len(trust) > 1:
            raise ValueError(f"{' and '.join(trust)} do not go together: choose one way to trust the agents")
        if self.agent_port is not None and (not self.names or self.agent_token_file is None):
            raise ValueError("agent_port applies to names with agent_token_file (the port of each fio host's "
                             "agent); each of agents gives its own ADDR:PORT")
        return self

    def hosts(self) -> tuple[Host, ...]:
        return parse_hosts(",".join(self.names)) if self.names else ()

    def remote_path(self) -> PurePosixPath | None:
        return PurePosixPath(self.path) if self.path is not None else None

    def host_agent_port(self) -> int:
        return AGENT_PORT if self.agent_port is None else self.agent_port


def workload_refusal(entry: Any, spec: HostsSpec) -> str:
    """Why a [[workload]] entry cannot run on `spec`'s hosts, or '' (as its capabilities say)."""
    kind = entry.kind
    definition = WORKLOADS[kind]
    if definition.capabilities.fio_servers:
        return "" if spec.names else f"{kind} runs on fio servers: give [hosts] names and path"
    if definition.capabilities.agents:
        if not spec.agents:
            return f"{kind} runs from backupbench agents: give [hosts] agents and agent_token_file"
        if definition.served_by_layout(entry):
            return f"{kind} on [hosts] needs endpoint: there is no layout whose MinIO could serve it"
        return ""
    runnable = ", ".join(names_where(lambda capabilities: capabilities.fio_servers or capabilities.agents))
    return (f"{kind} cannot run on [hosts]: only {runnable} run on other machines (as run --hosts "
            "and run --agents do); measure it with a [[layout]] recipe on that machine instead")
