"""Sampling the host while a workload runs: CPU, memory, load and every block device
under the target, computed exactly as `iostat -x -m` and `sar` compute them.

    from backupbench.monitor import Sampler, device_stack, Thresholds
    stack = device_stack(target_dir)
    with Sampler(interval=1.0, devices=stack.all_names or None, csv_path=run_dir / "monitor.csv") as s:
        ...   # the workload
    summary = s.summary            # avg / p95 / max per figure, warnings, to_figures()

Modules: procfs (pure parsers; /proc and /sys are read through hostfiles.HostFiles),
rates (counters -> rates, the one place), sysfs and stack (device tree), metrics (the
figure table), summary, thresholds, csvlog, sampler, live (rich rendering; imports rich).
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
