"""What every lab VM test needs on the host, checked once: the reason to skip, or None."""

from __future__ import annotations

import os
import shutil

LAB_TOOLS = ("qemu-system-x86_64", "busybox", "depmod", "dpkg-deb")


def lab_missing(*extra_tools: str) -> str | None:
    if os.geteuid() != 0:
        return "the lab needs root"
    for tool in (*LAB_TOOLS, *extra_tools):
        if shutil.which(tool) is None:
            return f"{tool} is missing (run scripts/install-lab-deps.sh and scripts/install-zfs.sh; make test does)"
    return None
