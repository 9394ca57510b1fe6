"""The guest kernel: Debian's own, fetched with `apt-get download`, never installed.

`apt-get install linux-image-amd64` on the host would pull in udev and upgrade systemd, so the
lab downloads the package that `linux-image-amd64` depends on (and `mdadm`), unpacks them with
`dpkg-deb -x` into a staging folder and runs `depmod` there. QEMU boots the ELF `vmlinux`
through its PVH entry point; Debian ships a bzImage, so `extract_vmlinux` finds the compressed
kernel inside it and decompresses it (the bzImage through SeaBIOS crawls under TCG).
"""

from __future__ import annotations

import lzma
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

from backupbench import process
from backupbench.errors import BackupbenchError, ProcessError

META_PACKAGE = "linux-image-amd64"
USERSPACE_PACKAGES = ("mdadm",)

XZ_MAGIC = b"\xfd7zXZ\x00"
GZIP_MAGIC = b"\x1f\x8b\x08"
ELF_MAGIC = b"\x7fELF"


@dataclass(frozen=True)
class Package:
    name: str
    version: str

    @property
    def spec(self) -> str:
        return f"{self.name}={self.version}"


class AptError(BackupbenchError):
    """A package could not be resolved or downloaded."""


def _apt_failure(package: str, exc: ProcessError) -> AptError:
    tail = exc.stderr.strip().splitlines()
    reason = next((line for line in reversed(tail) if line.startswith(("E:", "Err"))), tail[-1] if tail else "")
    return AptError(f"could not download the lab package {package}: {reason or exc.message}",
                    "check `apt-get update` works and the Debian mirror is reachable")


def depends_of(apt_cache_depends: str, package: str) -> str | None:
    """The first `Depends:` of `package` in `apt-cache depends` output (skips `<virtual>`)."""
    for line in apt_cache_depends.splitlines():
        match = re.match(r"\s*\|?Depends:\s*(\S+)", line)
        if match and not match.group(1).startswith("<"):
            return match.group(1)
    return None


def candidate_version(apt_cache_policy: str, package: str) -> str | None:
    """The `Candidate:` version of `package` in `apt-cache policy` output."""
    current = None
    for line in apt_cache_policy.splitlines():
        if line and not line[0].isspace() and line.rstrip().endswith(":"):
            current = line.rstrip()[:-1]
        elif current == package:
            match = re.match(r"\s*Candidate:\s*(\S+)", line)
            if match and match.group(1) != "(none)":
                return match.group(1)
    return None


def _apt_cache(args: list[str]) -> str:
    return process.run(["apt-cache", *args], timeout=120, check=False).stdout


def resolve(update_if_missing: bool = True) -> list[Package]:
    """The exact kernel package and userspace packages the lab image is built from.

    Runs `apt-get update` once when the package lists do not know them (a fresh machine),
    which needs root.
    """
    for attempt in (1, 2):
        kernel = depends_of(_apt_cache(["depends", META_PACKAGE]), META_PACKAGE)
        names = [kernel, *USERSPACE_PACKAGES] if kernel else []
        policy = _apt_cache(["policy", *names]) if names else ""
        packages = [Package(name, version) for name in names
                    if (version := candidate_version(policy, name)) is not None]
        if kernel and len(packages) == len(names):
            return packages
        if attempt == 1 and update_if_missing and os.geteuid() == 0:
            try:
                process.run(["apt-get", "update", "-qq"], timeout=600)
            except ProcessError as exc:
                raise _apt_failure(META_PACKAGE, exc) from exc
            continue
        missing = META_PACKAGE if not kernel else ", ".join(n for n in names if n not in {p.name for p in packages})
        raise AptError(f"apt does not know the lab package(s) {missing}",
                       "run `apt-get update` (as root) with Debian's main repository configured")
    raise AssertionError("unreachable")


def download(packages: list[Package], dest: Path) -> list[Path]:
    """`apt-get download` each package into `dest`; the .deb paths, in order."""
    debs: list[Path] = []
    for package in packages:
        before = set(dest.glob("*.deb"))
        try:
            process.run(["apt-get", "download", "-q", package.spec], cwd=dest, timeout=900)
        except ProcessError as exc:
            raise _apt_failure(package.spec, exc) from exc
        new = sorted(set(dest.glob("*.deb")) - before)
        if not new:
            raise AptError(f"apt-get download {package.spec} left no .deb in {dest}")
        debs.extend(new)
    return debs


def unpack(debs: list[Path], stage: Path) -> None:
    for deb in debs:
        process.run(["dpkg-deb", "-x", str(deb), str(stage)], timeout=600)


def kernel_release(stage: Path) -> str:
    """The one KVER under STAGE/lib/modules."""
    releases = sorted(p.name for p in (stage / "lib" / "modules").iterdir() if p.is_dir())
    if len(releases) != 1:
        raise BackupbenchError(f"expected one kernel under {stage}/lib/modules, found {releases or 'none'}")
    return releases[0]


def depmod(stage: Path, release: str) -> None:
    process.run(["depmod", "-b", str(stage), release], timeout=300)


def extract_vmlinux(bzimage: bytes) -> bytes:
    """The ELF kernel inside a bzImage: the first xz (or gzip) stream that decompresses to ELF."""
    for magic, make in ((XZ_MAGIC, lambda: lzma.LZMADecompressor(format=lzma.FORMAT_XZ)),
                        (GZIP_MAGIC, lambda: zlib.decompressobj(16 + zlib.MAX_WBITS))):
        start = bzimage.find(magic)
        while start != -1:
            try:
                data = make().decompress(bzimage[start:])
            except (lzma.LZMAError, zlib.error, EOFError):
                data = b""
            if data.startswith(ELF_MAGIC):
                return data
            start = bzimage.find(magic, start + 1)
    raise BackupbenchError("no compressed ELF kernel found in the bzImage",
                           "the lab supports kernels compressed with xz or gzip (Debian's are xz)")
