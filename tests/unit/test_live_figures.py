"""The figures a phase's progress shows while it runs (issue 42): fio's MiB/s and IOPS, every
agent's loader summed, and the hosts' disks from their agents' newest samples."""

from __future__ import annotations

from pathlib import Path

from backupbench.runner.agents_merge import live_total
from backupbench.runner.host_monitor import HostSampler


def test_every_agents_live_figures_are_summed():
    details = ["101.5 MiB/s, 102 objects/s", "98.5 MiB/s, 98 objects/s, 2 errors", ""]
    assert live_total(details, 1, 3) == "200.0 MiB/s, 200 objects/s over 2 agents, 1/3 agents done"
    assert live_total([""], 0, 2) == "0/2 agents done"


def test_the_hosts_disks_right_now_from_each_hosts_newest_recent_sample(tmp_path: Path):
    class Client:
        def with_timeout(self, timeout):
            return self

    sampler = HostSampler({"10.0.0.5": Client(), "10.0.0.6": Client(), "10.0.0.7": Client()}, tmp_path)
    a, b, c = sampler.feeds
    a.points, b.points = [(99.0, 1.0, 50.0), (100.0, 1.0, 120.0)], [(100.5, 1.0, 80.0)]
    c.points = [(90.0, 1.0, 999.0)]   # its agent is late: not "now"
    assert sampler.live(now=101.0) == "hosts' disks 200.0 MiB/s (2 of 3 hosts)"
    assert HostSampler({}, tmp_path).live(now=101.0) == ""
