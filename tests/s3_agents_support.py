"""The S3 agents' lab (tests/integration/test_s3_agents*.py): a real MinIO in one network
namespace and real `backupbench agent`s in others, all on one bridge of netns_support's Hosts,
and the controller's command line for a run over them.

`s3_agents_lab` is module-scoped: each module that asks for it gets its own MinIO and
namespaces, removed (and checked gone) after the module's last test.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import NamedTuple

import pytest

from backupbench.layouts.minio import HEALTH_PATH, find_minio
from netns_support import BACKUPBENCH, Agent, Hosts, hosts_for
from s3_fixtures import S3Admin, require_s3_tools

BUCKET = "agentsbench"
MINIO, AGENT_NAMESPACES = 1, (2, 3, 4)   # namespace numbers on the lab's bridge


class S3AgentsLab(NamedTuple):
    endpoint: str
    admin: S3Admin
    token_file: Path
    base: Path
    hosts: Hosts


def _wait_ready(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"MinIO ended: {log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"MinIO did not start: {log.read_text()}")


@pytest.fixture(scope="module")
def s3_agents_lab(tmp_path_factory):
    """MinIO running in namespace 1 with the bucket made; namespaces 2-4 for the agents."""
    require_s3_tools()
    base = tmp_path_factory.mktemp("s3agents")
    token_file = base / "token"
    token_file.write_text(secrets.token_hex(32) + "\n")
    os.chmod(token_file, 0o600)
    user, password = "bb" + secrets.token_hex(6), secrets.token_hex(16)
    (base / "drive").mkdir()
    log = base / "minio.log"
    minio = None
    with hosts_for(base) as hosts:
        try:
            for n in (MINIO, *AGENT_NAMESPACES):
                hosts.make(n)
            address = hosts.addresses[MINIO]
            env = {**os.environ, "MINIO_ROOT_USER": user, "MINIO_ROOT_PASSWORD": password, "MINIO_CI_CD": "1",
                   "MINIO_BROWSER": "off"}
            with open(log, "wb") as out:
                minio = subprocess.Popen([*hosts.exec_prefix(MINIO), str(find_minio()), "server", "--quiet",
                                          "--address", f"{address}:9000", "--console-address", f"{address}:9001",
                                          str(base / "drive")], env=env, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
            endpoint = f"http://{address}:9000"
            # /minio/health/live answers as soon as HTTP is up, before the drive is formatted:
            # a PUT then got 503 XMinioServerNotInitialized. The product's path waits for write quorum.
            _wait_ready(f"{endpoint}{HEALTH_PATH}", minio, log)
            admin = S3Admin(endpoint, user, password)
            admin.create_bucket(BUCKET)
            yield S3AgentsLab(endpoint, admin, token_file, base, hosts)
        finally:
            if minio is not None:
                minio.terminate()
                try:
                    minio.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    minio.kill()
                    minio.wait(timeout=10)


def _agent(lab: S3AgentsLab, index: int, token_file: Path | None = None) -> Agent:
    root = lab.base / f"root{index}"
    root.mkdir(exist_ok=True)
    n = AGENT_NAMESPACES[index]
    return Agent(lab.hosts.exec_prefix(n), f"{lab.hosts.addresses[n]}:7480", token_file or lab.token_file, root,
                 lab.base / f"agent{index}.log")


@contextlib.contextmanager
def agents(lab: S3AgentsLab, *token_files: Path | None):
    """Agents in the agents' namespaces, one per token file (None: the right token); every one
    started is stopped on the way out, whatever happened. Yields them and their exit codes
    (filled in after the block)."""
    started: list[Agent] = []
    codes: list[int] = []
    try:
        for index, token_file in enumerate(token_files):
            started.append(_agent(lab, index, token_file))
        yield started, codes
    finally:
        codes += [agent.stop() for agent in started]


def run_argv(lab: S3AgentsLab, started: list[Agent], *extra: str, bucket: str = BUCKET) -> list[str]:
    """The controller's command line for an S3 run over these agents."""
    return [BACKUPBENCH, "run", "--workload", "s3", "--endpoint", lab.endpoint, "--bucket", bucket,
            "--agents", ",".join(a.address for a in started), "--agent-token-file", str(lab.token_file),
            *(arg for agent in started for arg in agent.trust_args),   # each agent's certificate pinned
            "--results", str(lab.base / "results"), "--json", "--quiet", *extra]


def run_env(lab: S3AgentsLab) -> dict[str, str]:
    return {**os.environ, "AWS_ACCESS_KEY_ID": lab.admin.access_key, "AWS_SECRET_ACCESS_KEY": lab.admin.secret_key}
