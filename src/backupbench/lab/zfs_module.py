"""The ZFS kernel module for the lab guest's kernel: built once with DKMS, kept in a cache.

The host kernel here cannot load modules, so ZFS runs only in the lab VM. Debian ships ZFS's
kernel part as source (zfs-dkms, in contrib) that DKMS builds against a kernel's headers.
This builds it for the *guest's* kernel without installing anything for that kernel: the
headers (linux-headers-KVER, its -common package, linux-kbuild) and zfs-dkms are fetched with
`apt-get download` and unpacked into a staging folder, and `dkms build` runs with its tree,
its source tree and the kernel's build folder all pointed there (--dkmstree, --sourcetree,
--kernelsourcedir). Only spl.ko and zfs.ko are kept, in <cache>/<KVER>/zfs-<version>/.

The version is the host's zfsutils-linux: the guest runs the host's own zpool and zfs (the
lab shares the host's root), and userspace and module must match. scripts/install-zfs.sh
installs that package and then builds the module (`backupbench lab --build-zfs`).

Measured on the development machine (2 cores): zfs 2.3.2 for 6.1.0-56-amd64 in 3 min 35 s,
all but a few seconds of it `dkms build` (configure 1 min, make 2.5 min); spl.ko 0.3 MB,
zfs.ko 9 MB.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from backupbench import process
from backupbench.errors import BackupbenchError, ProcessError, ToolMissingError
from backupbench.lab import kernel

USERSPACE_PACKAGE = "zfsutils-linux"
SOURCE_PACKAGE = "zfs-dkms"
MODULE_FILES = ("spl.ko", "zfs.ko")
CACHE_ENV = "BACKUPBENCH_ZFS_CACHE"
BUILD_HINT = "build it once with scripts/install-zfs.sh (about 4 minutes; `make deps` runs it)"
BUILD_TIMEOUT_S = 3600.0

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ZfsModule:
    """spl.ko and zfs.ko built for one kernel release, of one ZFS version."""

    directory: Path
    kernel_release: str
    version: str  # the Debian version of zfs-dkms, equal to the host's zfsutils-linux

    @property
    def files(self) -> tuple[Path, ...]:
        return tuple(self.directory / name for name in MODULE_FILES)

    def fingerprint(self) -> str:
        """What the guest image depends on: the build's record (it names the build's time)."""
        return (self.directory / "module.json").read_text()


def default_cache_root() -> Path:
    """$BACKUPBENCH_ZFS_CACHE, else the project's .tools/zfs in a checkout, else ~/.cache/backupbench/zfs."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    project = process.PROJECT_TOOLS.parent.parent
    if (project / "pyproject.toml").is_file():
        return process.PROJECT_TOOLS.parent / "zfs"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "backupbench" / "zfs"


def userspace_version(query: Callable[[list[str]], str] | None = None) -> str | None:
    """The installed zfsutils-linux version (Debian's, e.g. 2.3.2-2~bpo12+2), or None."""
    def dpkg_query(argv: list[str]) -> str:
        if shutil.which(argv[0]) is None:
            return ""
        done = process.run(argv, timeout=30, check=False)
        return done.stdout if done.returncode == 0 else ""

    text = (query or dpkg_query)(["dpkg-query", "-W", "-f", "${Status}|${Version}", USERSPACE_PACKAGE])
    status, _, version = text.partition("|")
    return version.strip() if status.endswith(" installed") and version.strip() else None


def upstream_version(debian_version: str) -> str:
    """2.3.2 from 2.3.2-2~bpo12+2 (and from 1:2.3.2-1): the version DKMS knows the source by."""
    without_epoch = debian_version.split(":", 1)[-1]
    return without_epoch.rsplit("-", 1)[0] if "-" in without_epoch else without_epoch


def release_of(kernel_package: str) -> str:
    """6.1.0-56-amd64 from linux-image-6.1.0-56-amd64."""
    if not kernel_package.startswith("linux-image-"):
        raise BackupbenchError(f"{kernel_package} is not a linux-image package")
    return kernel_package.removeprefix("linux-image-")


def header_names(apt_cache_depends: str, release: str) -> list[str]:
    """linux-headers-KVER and what it needs from the kernel's own packages (its -common
    package, linux-kbuild), from `apt-cache depends linux-headers-KVER`; the compiler it
    names is the host's."""
    names = [f"linux-headers-{release}"]
    for line in apt_cache_depends.splitlines():
        match = re.match(r"\s*\|?Depends:\s*(\S+)", line)
        if match and match.group(1).startswith(("linux-headers-", "linux-kbuild-")) and match.group(1) not in names:
            names.append(match.group(1))
    return names


def find_built(cache_root: Path, release: str, version: str | None) -> ZfsModule | None:
    if version is None:
        return None
    directory = cache_root / release / f"zfs-{version}"
    if (directory / "module.json").is_file() and all((directory / name).is_file() for name in MODULE_FILES):
        return ZfsModule(directory, release, version)
    return None


def for_guest(kernel_package: kernel.Package, cache_root: Path | None = None) -> ZfsModule | None:
    """The module built for this guest kernel and the host's zfsutils-linux, if there is one."""
    return find_built(cache_root or default_cache_root(), release_of(kernel_package.name), userspace_version())


def _check_build_tools() -> None:
    for tool, package in (("dkms", "dkms"), ("make", "make"), ("gcc-12", "gcc-12"),
                          ("apt-get", "apt"), ("dpkg-deb", "dpkg")):
        if shutil.which(tool) is None:
            raise ToolMissingError(f"{tool} is not installed (needed to build the ZFS module for the lab)",
                                   f"install it with: apt-get install --no-install-recommends {package}")


def _headers_packages(release: str, version: str) -> list[kernel.Package]:
    depends = process.run(["apt-cache", "depends", f"linux-headers-{release}"], timeout=120, check=False).stdout
    names = header_names(depends, release)
    return [kernel.Package(name, version) for name in names]


def _point_headers_at_stage(stage: Path, release: str) -> Path:
    """The kernel's build folder in the stage. Its Makefile includes the -common headers by
    their installed, absolute path: point that line into the stage."""
    build = stage / "usr" / "src" / f"linux-headers-{release}"
    makefile = build / "Makefile"
    if not makefile.is_file():
        raise BackupbenchError(f"the headers package has no {makefile.relative_to(stage)}")
    text = makefile.read_text()
    makefile.write_text(re.sub(r"^include /usr/src/", f"include {stage}/usr/src/", text, flags=re.M))
    return build


def build(kernel_package: kernel.Package, cache_root: Path | None = None,
          progress: Progress | None = None) -> ZfsModule:
    """spl.ko and zfs.ko for `kernel_package`'s kernel, of the host's zfsutils-linux version;
    built with DKMS unless already in the cache."""
    say = progress or (lambda _message: None)
    root = (cache_root or default_cache_root()).expanduser().resolve()
    release = release_of(kernel_package.name)
    version = userspace_version()
    if version is None:
        raise ToolMissingError(f"{USERSPACE_PACKAGE} is not installed: the lab's ZFS module must match its version",
                               "run scripts/install-zfs.sh")
    built = find_built(root, release, version)
    if built is not None:
        return built
    _check_build_tools()
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
    try:
        debs, stage, tree = work / "debs", work / "stage", work / "dkms"
        for folder in (debs, stage, tree):
            folder.mkdir()
        packages = [*_headers_packages(release, kernel_package.version), kernel.Package(SOURCE_PACKAGE, version)]
        say(f"downloading {', '.join(p.spec for p in packages)}")
        kernel.unpack(kernel.download(packages, debs), stage)
        kernel_build = _point_headers_at_stage(stage, release)
        upstream = upstream_version(version)
        dkms = ["dkms", "--dkmstree", str(tree), "--sourcetree", str(stage / "usr" / "src")]
        say(f"dkms build zfs {upstream} for {release} (a few minutes)")
        started = time.monotonic()
        try:
            process.run([*dkms, "add", "-m", "zfs", "-v", upstream], timeout=120)
            process.run([*dkms, "build", "-m", "zfs", "-v", upstream, "-k", release,
                         "--kernelsourcedir", str(kernel_build), "-j", str(os.cpu_count() or 1)],
                        timeout=BUILD_TIMEOUT_S)
        except ProcessError as exc:
            log = next(tree.glob(f"zfs/{upstream}/build/make.log"), None)
            raise BackupbenchError(f"dkms could not build zfs {upstream} for {release}: {exc.message}",
                                   f"see {log}" if log else "run scripts/install-zfs.sh again to see dkms's output") from exc
        seconds = time.monotonic() - started
        made = tree / "zfs" / upstream / release / os.uname().machine / "module"
        out = work / "out"
        out.mkdir()
        for name in MODULE_FILES:
            if not (made / name).is_file():
                raise BackupbenchError(f"dkms built zfs {upstream} for {release} but left no {name} in {made}")
            shutil.copyfile(made / name, out / name)
        (out / "module.json").write_text(json.dumps({
            "kernel_release": release, "kernel_package": kernel_package.spec, "zfs_version": version,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "build_seconds": round(seconds, 1),
        }, indent=2) + "\n")
        target = root / release / f"zfs-{version}"
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            shutil.rmtree(target)
        out.rename(target)
        return ZfsModule(target, release, version)
    finally:
        shutil.rmtree(work, ignore_errors=True)
