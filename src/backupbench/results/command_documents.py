"""The documents of the commands that answer without a stored run: `devices`, `plan`,
`hosts check` and the sizing answers (`size capacity`, `rebuild`, `snapshot`, `window`), as
pydantic models (document_models.py says why). Sizes are exact bytes, rates bytes per second,
durations seconds."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import ConfigDict, Field

from backupbench.results.document_models import Header, Shape, sometimes

Argv = list[str]


class DeviceFacts(Shape):
    """The device's facts as collected (devices/blockfacts.py): more keys than these two."""

    model_config = ConfigDict(defer_build=True, extra="allow")
    path: str
    size_bytes: Optional[int] = Field(description="bytes")


class Lsblk(Shape):
    """What lsblk says the device is."""

    size_bytes: Optional[int] = Field(description="bytes")
    rotational: Optional[bool] = Field(description="lsblk ROTA: a spinning disk (or one that says so)")
    model: Optional[str]
    serial: Optional[str]
    transport: Optional[str] = Field(description="lsblk TRAN: sata, sas, nvme, usb, iscsi, ...")


class DeviceReason(Shape):
    rule: str
    problem: str
    fix: str


class Device(Shape):
    path: str
    verdict: Literal["usable", "refused"]
    reasons: list[DeviceReason]
    facts: DeviceFacts
    lsblk: Optional[Lsblk] = Field(description="null when lsblk does not list the device")


class DevicesDocument(Header):
    """`backupbench devices [DEVICE]... --json`: each device's facts, verdict and the reasons it is refused."""

    kind: Literal["backupbench.devices"]
    devices: list[Device]


class Guard(Shape):
    argv: Argv
    contains: str


class PlannedAction(Shape):
    description: str
    do: list[Argv]
    undo: list[Argv]
    guard: Optional[Guard] = Field(description="what proves the object is the run's before the undo touches it")
    destructive: bool


class PlannedFault(Shape):
    failed: list[str]
    target: str = Field(description="what the rebuild goes onto")
    fail: list[Argv]
    rebuild: list[Argv]
    copy_back: list[Argv]
    sysctls: dict[str, int] = Field(description="md speed limits set for the run, KiB/s")


class PlannedLayout(Shape):
    name: str
    kind: str
    devices: list[str]
    mount_point: Optional[str]
    refusals: list[str]
    actions: list[PlannedAction]
    teardown: list[Argv]
    fault: Optional[PlannedFault]


class PlannedRemote(Shape):
    """A workload of a recipe with [hosts]: where it runs and through what."""

    group: str = Field(description="its phases are stored as <group>/<phase>; '' for a recipe's only workload")
    kind: str
    phases: list[str]
    machines: list[str] = Field(description="fio servers (host names) or agents (ADDR:PORT)")
    through: Literal["fio servers", "backupbench agents"]
    works_on: str = Field(description="the directory on every host, or the bucket at its endpoint")


class PlanDocument(Header):
    """`backupbench plan RECIPE --json`: every layout's actions (argument lists) and teardown;
    nothing is run. Exit 3 when refusals is not empty."""

    kind: Literal["backupbench.plan"]
    recipe: str
    run_id: str = Field(min_length=1)
    refusals: list[str]
    order: str | None = Field(description="with repeats: whether the layouts will be measured in alternating "
                                          "rounds or one after another, and why; null without repeats")
    layouts: list[PlannedLayout]
    hosts: list[PlannedRemote] = Field(description="a recipe with [hosts]: each workload and its machines")


class FioHost(Shape):
    host: str
    reachable: bool
    fio: str
    server_hostname: str
    problem: str = Field(description="'' when the host is usable")


class AgentHost(Shape):
    host: str
    agent: str = Field(description="ADDR:PORT called")
    reachable: bool = Field(description="answered over the trusted transport, taking the token")
    version: str
    problem: str = Field(description="'' when the agent is usable")


class HostsCheckDocument(Header):
    """`backupbench hosts check HOSTS --json [--agent-token-file F]`: whether each fio server
    answers and runs this client's fio, and (with --agent-token-file) each host's agent. Exit 3
    when one has a problem."""

    kind: Literal["backupbench.hosts.check"]
    client_fio: str
    hosts: list[FioHost]
    agents: list[AgentHost] = sometimes("Only with --agent-token-file: each machine's backupbench agent "
                                        "(several fio servers on one address share one).")


class Capacity(Shape):
    layout: str = Field(description="as built, e.g. raid6, draid2:3d:45c:2s")
    disks: int
    raw: int = Field(description="bytes, the sum of the disks")
    usable: int = Field(description="bytes of data the layout takes before it refuses writes, as its own software "
                                    "counts its space")
    failures_tolerated: int
    failures_best_case: int
    notes: list[str]
    data_area: int = Field(description="bytes: the disks less their redundancy alone, before any accounting")
    reported: int = Field(description="bytes the storage itself reports for data on the new layout")
    reported_by: str = Field(description="where the storage reports it, e.g. df -B1 (available)")
    efficiency_percent: float


class SizeCapacityDocument(Header):
    """`backupbench size capacity --json`: sizes in bytes (exact integers)."""

    kind: Literal["backupbench.size.capacity"]
    layouts: list[Capacity]


class RebuildTime(Shape):
    label: str
    seconds: float


class RebuildEstimate(Shape):
    measured_on: str = sometimes("--from-run: the layout measured")
    layout: str
    capacity: Capacity
    failed_disk_data: int = Field(description="bytes to reconstruct")
    rate: int = Field(description="bytes/s per disk")
    classic: RebuildTime
    distributed: Optional[RebuildTime] = Field(description="null: no distributed spares to compare with")
    draid: Optional[str] = Field(description="the dRAID vdev distributed describes")
    failures_while_rebuilding: int = Field(description="further failures survivable before the rebuild ends")
    notes: list[str]
    speedup: Optional[float]


class MeasuredRebuild(Shape):
    layout: str = Field(description="the recipe layout's name")
    sizing_layout: str
    disks: int
    disk_bytes: int
    used_percent: float
    distributed: bool = Field(description="onto a dRAID distributed spare")
    rebuild_seconds: float
    rates_bps: dict[str, float] = Field(description="whole, loaded, idle: effective bytes/s per disk")


class SizeRebuildDocument(Header):
    """`backupbench size rebuild --json`: rebuild times in seconds, rates in bytes/s, sizes in
    bytes. With --from-run, also the run and what was measured."""

    kind: Literal["backupbench.size.rebuild"]
    run_id: str = sometimes("--from-run: the run measured")
    measured: list[MeasuredRebuild] = sometimes("--from-run: each layout's measured rebuild")
    layouts: list[RebuildEstimate]


class SnapshotSize(Shape):
    factor: float
    base: int = Field(description="bytes")
    margin_factor: float
    margin: int = Field(description="bytes")
    size: int = Field(description="bytes, per snapshot")
    total: int = Field(description="bytes, all snapshots together")


class SizeSnapshotDocument(Header):
    """`backupbench size snapshot --json`: sizes in bytes."""

    kind: Literal["backupbench.size.snapshot"]
    origin: int
    change: int
    snapshots: int
    low: SnapshotSize
    high: SnapshotSize
    full_cover: int = Field(description="a classic snapshot this large can never overflow")
    first_write_ios: int = Field(description="I/Os per first write to a chunk, 1 + 2N")
    write_speed_factor: float = Field(description="1 / (1 + 2N)")
    latency_alert_ms: float
    load_alert: float
    notes: list[str]


class WindowEstimate(Shape):
    backup_size: int
    speed: Optional[float] = Field(description="bytes/s")
    full_seconds: Optional[float]
    change_percent: Optional[float]
    incremental_size: Optional[int]
    incremental_seconds: Optional[float]
    window_seconds: Optional[float]
    needed_full_speed: Optional[float] = Field(description="bytes/s to finish a full within the window")
    needed_incremental_speed: Optional[float]
    full_fits: Optional[bool]
    incremental_fits: Optional[bool]


class MeasuredWindow(Shape):
    layout: Optional[str] = Field(description="the layout of an apply run; null for a run")
    operation: str
    label: str
    speed: float = Field(description="measured effective bytes/s")
    full_seconds: float
    incremental_label: Optional[str]
    incremental_seconds: Optional[float]
    window_seconds: Optional[float]
    full_fits: Optional[bool]
    incremental_fits: Optional[bool]


class SizeWindowDocument(Header):
    """`backupbench size window --json`: sizes in bytes, speeds in bytes/s, times in seconds."""

    kind: Literal["backupbench.size.window"]
    estimate: WindowEstimate
    run_id: Optional[str]
    measured: list[MeasuredWindow]


DOCUMENTS: dict[str, Any] = {
    "devices": DevicesDocument, "plan": PlanDocument, "hosts.check": HostsCheckDocument,
    "size.capacity": SizeCapacityDocument, "size.rebuild": SizeRebuildDocument,
    "size.snapshot": SizeSnapshotDocument, "size.window": SizeWindowDocument,
}
