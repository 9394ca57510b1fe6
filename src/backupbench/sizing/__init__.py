"""Sizing answers field engineers work out on paper (field notes D and E): usable capacity
and fault tolerance of a layout, rebuild time, classic snapshot size, backup windows; the
repository plan for a backup policy (policy.py, restore_points.py, operation_model.py,
measured_speeds.py, repository_plan.py, verdict.py, plan_model.py); what a layout's members
should give (speed_model.py) and a fault run's rebuild in the model's units (measured_rebuild.py).

Pure functions, no I/O; sizes are exact integer bytes, rates bytes per second.
`backupbench size ...` (cli/size_cmd.py, cli/repository_cmd.py) is their command line.
"""

from backupbench.sizing.capacity import Capacity, LayoutSpec, usable_capacity
from backupbench.sizing.rebuild import RebuildEstimate, rebuild_time
from backupbench.sizing.snapshot import SnapshotSizing, snapshot_sizing
from backupbench.sizing.window import MeasuredWindow, WindowEstimate, measured_windows, window_estimate

__all__ = [
    "Capacity", "LayoutSpec", "usable_capacity", "RebuildEstimate", "rebuild_time", "SnapshotSizing", "snapshot_sizing",
    "MeasuredWindow", "WindowEstimate", "measured_windows", "window_estimate",
]
