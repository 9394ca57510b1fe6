"""Sampling the host while a workload runs: CPU, memory, load and every block device
under the target, computed exactly as `iostat -x -m` and `sar` compute them.

    from backupbench.monitor import Sampler, device_stack, Thresholds
    stack = device_stack(target_dir)
    with Sampler(interval=1.0, devices=stack.all_names or None, csv_path=run_dir / "monitor.csv") as s:
        ...   # the workload
    summary = s.summary            # avg / p95 / max per figure, warnings, to_figures()

Modules: procfs (pure parsers; /proc and /sys are read through hostfiles.HostFiles),
rates (counters -> rates, the one place), sysfs and stack (device tree), zfs (a pool's disks
and its own figures), metrics (the figure table), summary, thresholds, csvlog, sampler,
options (the monitor's flags and recipe keys). Beside the sampler, the other things watched
during a workload: snapwatch and thinwatch (LVM's snapshot and thin-pool fill), rebuild,
rebuild_btrfs and rebuild_minio (an array's own rebuild state under a fault). The live view
is drawn by report/live.py.
"""

from backupbench.hostfiles import HostFiles
from backupbench.monitor.procfs import parse_diskstats, parse_loadavg, parse_meminfo, parse_proc_stat
from backupbench.monitor.rates import DiskRates, Sample, compute_sample, counter_delta, disk_rates
from backupbench.monitor.sampler import Sampler
from backupbench.monitor.stack import DeviceStack, combined, device_stack
from backupbench.monitor.summary import FigureStats, MonitorSummary
from backupbench.monitor.sysfs import resolve_device_name
from backupbench.monitor.thresholds import Thresholds

__all__ = [
    "Sampler", "device_stack", "combined", "DeviceStack", "Thresholds", "MonitorSummary", "FigureStats",
    "HostFiles", "Sample", "DiskRates", "compute_sample", "counter_delta", "disk_rates",
    "parse_diskstats", "parse_proc_stat", "parse_meminfo", "parse_loadavg",
    "resolve_device_name",
]
