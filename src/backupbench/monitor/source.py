"""The monitor reads the kernel's files through a HostFiles (see backupbench.hostfiles)."""

from backupbench.hostfiles import HostFiles

__all__ = ["HostFiles"]
