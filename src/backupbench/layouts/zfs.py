"""ZFS pools: raidz, mirror, stripe and dRAID vdevs, dataset properties, special and log vdevs.
The pool carries the user property backupbench:run=<run id>; only such a pool is destroyed."""

from __future__ import annotations

from backupbench.layouts.actions import Action, Guard, LayoutPlan, Requirement
from backupbench.layouts.naming import Names
from backupbench.recipe.layouts import Zfs

RUN_PROPERTY = "backupbench:run"


def vdev_args(spec: Zfs) -> tuple[str, ...]:
    devices = spec.devices
    if spec.vdev == "stripe":
        return devices
    if spec.vdev.startswith("draid"):
        parity = spec.vdev.removeprefix("draid")
        data = f":{spec.draid_data}d" if spec.draid_data else ""
        spares = f":{spec.draid_spares}s" if spec.draid_spares else ""
        return (f"draid{parity}{data}:{len(devices)}c{spares}", *devices)
    return (spec.vdev, *devices)


def plan(spec: Zfs, names: Names) -> LayoutPlan:
    properties = tuple(arg for key, value in sorted(spec.properties.items()) for arg in ("-O", f"{key}={value}"))
    special = ("special", *(("mirror",) if len(spec.special) > 1 else ()), *spec.special) if spec.special else ()
    log = ("log", *spec.log) if spec.log else ()
    create = ("zpool", "create", "-m", str(names.mount_point), "-O", f"{RUN_PROPERTY}={names.run_id}",
              *properties, names.pool, *vdev_args(spec), *special, *log)
    all_devices = (*spec.devices, *spec.special, *spec.log)
    pool = Action(f"make ZFS pool {names.pool} ({spec.vdev})", (create,),
                  (("zpool", "destroy", names.pool), *(("zpool", "labelclear", "-f", d) for d in all_devices)),
                  Guard(("zfs", "get", "-H", "-o", "value", RUN_PROPERTY, names.pool), names.run_id), destructive=True)
    requirements = (Requirement("ZFS kernel module", "kernel:zfs"), Requirement("zpool (zfsutils-linux)", "tool:zpool"))
    return LayoutPlan(spec.name, spec.kind, all_devices, (pool,), requirements, names.mount_point)
