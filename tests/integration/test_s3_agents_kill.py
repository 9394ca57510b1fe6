"""`backupbench run --workload s3 --agents` whose controller is SIGKILLed while the agents
write: `backupbench cleanup` afterwards deletes every agent's objects, and nothing else.

The same lab as test_s3_agents.py (tests/s3_agents_support.py: a real MinIO and two agents,
each in its own network namespace on 10.231.X.0/24, all removed in its `finally` blocks). The agents' jobs are
let finish after the controller died: each then keeps its objects for the next phase that
never comes, and is stopped before that wait ends, so what is left is exactly what a dead
controller leaves.
"""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from backupbench.agent.client import AgentRefused
from backupbench.journal import journal_dir, read
from netns_support import BACKUPBENCH, Agent
from s3_agents_support import BUCKET
from s3_agents_support import agents as _agents
from s3_agents_support import run_argv as _run
from s3_agents_support import run_env as _env
from s3_fixtures import S3Admin

OBJECTS = 3000   # 1500 per agent: seconds of PUTs at one stream each


@pytest.fixture(scope="module")
def lab(s3_agents_lab):
    return s3_agents_lab


def _run_id_once_both_write(admin: S3Admin, labels: list[str], controller: subprocess.Popen) -> str:
    """The run id, read from the agents' keys (backupbench/<run-id>/<label>/obj-N) once every
    agent has written at least one object."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and controller.poll() is None:
        keys = admin.keys(BUCKET, "backupbench/")
        writing = {key.split("/")[2]: key.split("/")[1] for key in keys if key.count("/") == 3}
        if set(labels) <= set(writing):
            run_ids = {writing[label] for label in labels}
            assert len(run_ids) == 1, keys[:10]
            return run_ids.pop()
        time.sleep(0.2)
    raise AssertionError(f"the agents did not both write (controller exit code {controller.poll()})")


def _until_idle(agent: Agent, token: str) -> None:
    """Wait until the agent's job has ended: it then takes a new (tiny) job instead of
    answering busy (409)."""
    client = agent.client(token)
    deadline = time.monotonic() + 300
    while True:
        try:
            job = client.smallfiles_run(run_id="idle", subfolder="idle", files=2, file_size=10)
            break
        except AgentRefused as busy:
            assert busy.status == 409 and time.monotonic() < deadline, busy.message
            time.sleep(0.5)
    assert client.wait(job["job_id"], timeout=60)["state"] == "done"


def test_sigkilled_controller_then_cleanup_deletes_every_agents_objects_and_nothing_else(lab):
    endpoint, admin, token_file, base, _ = lab
    results = base / "results"
    log = base / "killed-controller.log"
    mine: list[str] = []   # objects this test puts outside the run's prefix
    controller = None
    try:
        with _agents(lab, None, None) as (agents, codes):
            labels = [agent.address.replace(":", "-") for agent in agents]
            try:
                with open(log, "wb") as err:
                    controller = subprocess.Popen(
                        _run(lab, agents, "--objects", str(OBJECTS), "--object-size", "64KiB", "--concurrency", "2",
                             "--s3-phases", "put,get,delete"),
                        env=_env(lab), stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL)
                run_id = _run_id_once_both_write(admin, labels, controller)
                controller.send_signal(signal.SIGKILL)
                controller.wait(timeout=30)
            finally:
                if controller is not None and controller.poll() is None:
                    controller.kill()
                    controller.wait(timeout=30)
            for agent in agents:
                _until_idle(agent, token_file.read_text().strip())
        assert codes == [0, 0], [agent.log.read_text() for agent in agents]
        assert controller.returncode == -signal.SIGKILL, log.read_text()

        prefix = f"backupbench/{run_id}/"
        journal = read(journal_dir(results) / f"{run_id}.open.jsonl")
        assert [(i.artefact or {}).get("prefix") for i in journal.pending if (i.artefact or {}).get("kind")
                == "s3-objects"] == [prefix]
        left = admin.keys(BUCKET, prefix)
        assert len(left) == OBJECTS and {key.split("/")[2] for key in left} == set(labels)
        # Beside the run's prefix: another run's agent, a run id this one's is the start of,
        # and a key outside backupbench/. (Not the key backupbench/<run-id> itself: MinIO then
        # hides the keys below it, as a file system cannot hold a file and a folder of one name.)
        mine += [f"backupbench/20990101T000000-zz99/{labels[0]}/obj-00000000",
                 f"backupbench/{run_id}x/obj-00000000", "keep/obj-00000000"]
        for key in mine:
            admin.put(BUCKET, key)

        cleanup = subprocess.run([BACKUPBENCH, "cleanup", "--results", str(results)], env=_env(lab),
                                 capture_output=True, text=True, timeout=300)
        assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
        said = " ".join(cleanup.stdout.split())   # unwrapped: the terminal width breaks its lines
        removed = f"S3 objects under {prefix} in bucket {BUCKET} at {endpoint}: {OBJECTS:,} object(s) deleted"
        assert removed in said, said
        assert f"{run_id}: stored as interrupted" in said, said
        assert admin.keys(BUCKET, prefix) == []
        assert sorted(admin.keys(BUCKET)) == sorted(mine)
        assert all(admin.get(BUCKET, key) == b"not backupbench's" for key in mine)
        assert not list(journal_dir(results).glob("*.open.jsonl"))
    finally:
        for key in admin.keys(BUCKET):   # the bucket is this module's lab's own
            admin.request("DELETE", BUCKET, key)
