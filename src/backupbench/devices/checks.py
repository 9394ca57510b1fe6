"""The plan's device checks: each device checked once while planning, and all the devices
of a write re-checked right before it, from one look at the host each time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from backupbench import process
from backupbench.devices.block import eligible, open_exclusive, recheck_before_write
from backupbench.devices.blockfacts import BlockFacts, Probed, probe_signatures
from backupbench.devices.probe_host import Host
from backupbench.devices.systemfacts import Runner, SystemFacts, collect_system


@dataclass(frozen=True)
class Look:
    """What was collected at one moment for several devices at once."""

    system: SystemFacts
    signatures: Mapping[str, Probed]


class DeviceChecks:
    """Checks each device once for the plan, and keeps what it saw: right before the first
    write, the re-check compares the device with it (same disk, size, nothing new on it).

    `devices`: every device the plan will check (the recipe's [devices]). What every device
    shares (lsblk, pvs, mounts, swaps, md arrays) and each one's signatures (one wipefs for
    all) are collected once for the plan and once per re-check, not device by device: on a
    slow host (the lab's emulated guest runs each tool for about half a second) a four-disk
    layout's re-check ran 12 tools where it now runs 3 (6 when the one wipefs run fails and
    each device is asked on its own)."""

    def __init__(self, devices: tuple[str, ...] = (), *, run: Runner = process.run, host: Host | None = None,
                 open_exclusive: Callable[[str], None] = open_exclusive) -> None:
        self.seen: dict[str, BlockFacts] = {}
        self._devices = devices
        self._run, self._host, self._open_exclusive = run, host, open_exclusive
        self._planned: Look | None = None

    def _look(self, devices: tuple[str, ...]) -> Look:
        return Look(collect_system(run=self._run, host=self._host), probe_signatures(devices, self._run, self._host))

    def reasons(self, path: str) -> list[str]:
        if self._planned is None:
            self._planned = self._look(self._devices or (path,))
        facts, reasons = eligible(path, run=self._run, host=self._host, system=self._planned.system,
                                  signatures=self._planned.signatures)
        self.seen[path] = facts
        return [f"{r.problem} ({r.fix})" for r in reasons]

    def kind_of(self, path: str) -> str | None:
        """lsblk's type of a device already checked (disk, part, ...)."""
        facts = self.seen.get(path)
        return facts.type if facts is not None else None

    def recheck(self, devices: tuple[str, ...]) -> None:
        now = self._look(devices)  # right before the write: nothing from the plan
        for device in devices:
            recheck_before_write(device, expected=self.seen.get(device), run=self._run, host=self._host,
                                 system=now.system, signatures=now.signatures, open_exclusive=self._open_exclusive)
