"""Pure tests of the guest image's parts: newc cpio, module closure, vmlinux extraction,
apt output parsing, the initramfs members."""

from __future__ import annotations

import lzma
import shutil
import stat
import struct
import subprocess
import zlib

import pytest

from backupbench.errors import BackupbenchError
from backupbench.lab import cpio, initramfs, kernel, modules


def read_newc(data: bytes) -> list[tuple[str, int, bytes]]:
    """A minimal newc reader: (name, mode, data) per member, trailer excluded."""
    members, offset = [], 0
    while True:
        header = data[offset:offset + 110]
        assert header[:6] == b"070701", f"bad magic at {offset}"
        fields = [int(header[6 + 8 * i:14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = fields[1], fields[6], fields[11]
        name_start = offset + 110
        name = data[name_start:name_start + namesize - 1].decode()
        assert data[name_start + namesize - 1] == 0
        data_start = name_start + namesize + (-(110 + namesize) % 4)
        assert data_start % 4 == 0
        if name == cpio.TRAILER:
            assert (data_start) % 4 == 0
            return members
        members.append((name, mode, data[data_start:data_start + size]))
        offset = data_start + size + (-size % 4)


def test_newc_round_trip_and_alignment():
    entries = [cpio.Entry.directory("bin"), cpio.Entry.file("bin/a", b"x" * 5, 0o755),
               cpio.Entry.symlink("bin/sh", "/bin/busybox"), cpio.Entry.file("init", b"")]
    data = cpio.archive(entries)
    assert len(data) % 4 == 0
    members = read_newc(data)
    assert [m[0] for m in members] == ["bin", "bin/a", "bin/sh", "init"]
    assert stat.S_ISDIR(members[0][1]) and stat.S_ISREG(members[1][1]) and stat.S_ISLNK(members[2][1])
    assert stat.S_IMODE(members[1][1]) == 0o755
    assert members[1][2] == b"xxxxx" and members[2][2] == b"/bin/busybox"


def test_archive_is_deterministic():
    entries = [cpio.Entry.file("a/b", b"1")]
    assert cpio.archive(entries) == cpio.archive(list(entries))


@pytest.mark.skipif(shutil.which("cpio") is None, reason="GNU cpio not installed")
def test_gnu_cpio_reads_our_archive(tmp_path):
    data = cpio.archive(cpio.with_parents([cpio.Entry.file("x/y/z.txt", b"hello"), cpio.Entry.symlink("x/l", "y")]))
    listing = subprocess.run(["cpio", "-it", "--quiet"], input=data, capture_output=True, check=True).stdout
    assert listing.decode().split() == ["x", "x/y", "x/y/z.txt", "x/l"]


def test_with_parents_adds_each_directory_once():
    out = cpio.with_parents([cpio.Entry.file("a/b/c", b""), cpio.Entry.file("a/b/d", b""), cpio.Entry.directory("a")])
    assert [e.path for e in out] == ["a", "a/b", "a/b/c", "a/b/d"]


@pytest.mark.parametrize("bad", ["", "/", "a/../b"])
def test_bad_paths_refused(bad):
    with pytest.raises(ValueError):
        cpio.Entry.file(bad, b"")


SHOW_DEPENDS = """\
insmod /s/lib/modules/6.1.0-56-amd64/kernel/drivers/virtio/virtio_ring.ko 
insmod /s/lib/modules/6.1.0-56-amd64/kernel/drivers/virtio/virtio.ko 
insmod /s/lib/modules/6.1.0-56-amd64/kernel/drivers/virtio/virtio_pci.ko 
insmod /s/lib/modules/6.1.0-56-amd64/kernel/drivers/virtio/virtio_ring.ko 
insmod /s/lib/modules/6.1.0-56-amd64/kernel/drivers/virtio/virtio.ko 
insmod /s/lib/modules/6.1.0-56-amd64/kernel/drivers/block/virtio_blk.ko 
builtin crc32c
insmod /s/lib/modules/6.1.0-56-amd64/kernel/drivers/md/dm-mod.ko dm_mq_nr_hw_queues=1
insmod /s/lib/modules/6.1.0-56-amd64/kernel/drivers/block/loop.ko """


def test_load_order_dedupes_keeps_dependencies_first():
    order = modules.load_order(SHOW_DEPENDS, "/s/lib/modules/6.1.0-56-amd64")
    assert order == ["kernel/drivers/virtio/virtio_ring.ko", "kernel/drivers/virtio/virtio.ko",
                     "kernel/drivers/virtio/virtio_pci.ko", "kernel/drivers/block/virtio_blk.ko",
                     "kernel/drivers/md/dm-mod.ko", "kernel/drivers/block/loop.ko"]
    assert modules.builtin_names(SHOW_DEPENDS) == ["crc32c"]


def test_boot_modules_are_carried():
    assert set(modules.BOOT_MODULES) <= set(modules.GUEST_MODULES)
    for needed in ("virtio_pci", "virtio_blk", "dm-mod", "dm-thin-pool", "dm-snapshot", "raid456", "md-mod", "xfs"):
        assert needed in modules.GUEST_MODULES


def _signed(body: bytes, signature: bytes) -> bytes:
    info = bytes([0, 0, 2, 0, 0, 0, 0, 0]) + struct.pack(">I", len(signature))
    return body + signature + info + modules.SIGNATURE_MAGIC


def test_strip_signature():
    body = b"\x7fELF" + b"\0" * 100
    assert modules.strip_signature(_signed(body, b"S" * 333)) == body
    assert modules.strip_signature(body) == body


def _fake_elf(size: int = 4096) -> bytes:
    return kernel.ELF_MAGIC + bytes(range(256)) * (size // 256)


def test_extract_vmlinux_from_xz_in_junk():
    elf = _fake_elf()
    # a decoy xz magic that is not a stream, then the real one, then trailing bytes
    bzimage = b"MZ" + b"\0" * 500 + kernel.XZ_MAGIC + b"junk" + lzma.compress(elf, format=lzma.FORMAT_XZ) + b"\0" * 64
    assert kernel.extract_vmlinux(bzimage) == elf


def test_extract_vmlinux_gzip():
    elf = _fake_elf()
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    bzimage = b"\0" * 300 + compressor.compress(elf) + compressor.flush() + b"tail"
    assert kernel.extract_vmlinux(bzimage) == elf


def test_extract_vmlinux_refuses_non_elf():
    with pytest.raises(BackupbenchError, match="no compressed ELF"):
        kernel.extract_vmlinux(b"\0" * 100 + lzma.compress(b"not an elf", format=lzma.FORMAT_XZ))


APT_DEPENDS = """linux-image-amd64
  Depends: linux-image-6.1.0-56-amd64
"""
APT_POLICY = """linux-image-6.1.0-56-amd64:
  Installed: (none)
  Candidate: 6.1.192-2
  Version table:
     6.1.192-2 500
mdadm:
  Installed: (none)
  Candidate: 4.2-5
"""


def test_apt_output_parsing():
    assert kernel.depends_of(APT_DEPENDS, "linux-image-amd64") == "linux-image-6.1.0-56-amd64"
    assert kernel.depends_of("linux-image-amd64\n", "linux-image-amd64") is None
    assert kernel.candidate_version(APT_POLICY, "linux-image-6.1.0-56-amd64") == "6.1.192-2"
    assert kernel.candidate_version(APT_POLICY, "mdadm") == "4.2-5"
    assert kernel.candidate_version(APT_POLICY, "busybox") is None
    assert kernel.candidate_version("mdadm:\n  Candidate: (none)\n", "mdadm") is None


def _contents(**overrides) -> initramfs.InitramfsContents:
    values = dict(busybox=b"BB", applets=["bin/sh", "bin/busybox", "sbin/insmod", "usr/sbin/chroot"],
                  kernel_release="6.1.0-56-amd64",
                  module_tree=[("kernel/a.ko", b"A"), ("kernel/b.ko", b"B"), ("modules.dep", b"kernel/b.ko: kernel/a.ko\n")],
                  boot_modules=["kernel/a.ko", "kernel/b.ko"], binaries={"mdadm": b"MD"})
    values.update(overrides)
    return initramfs.InitramfsContents(**values)


def test_initramfs_members():
    members = {m[0]: m for m in read_newc(cpio.archive(initramfs.entries(_contents())))}
    assert members["init"][2].startswith(b"#!/bin/sh") and stat.S_IMODE(members["init"][1]) == 0o755
    assert stat.S_ISLNK(members["bin/sh"][1]) and members["bin/sh"][2] == b"/bin/busybox"
    # busybox is the file itself, never a link to itself (init would fail with -40)
    assert stat.S_ISREG(members["bin/busybox"][1]) and members["bin/busybox"][2] == b"BB"
    assert members["etc/lab/modules"][2] == (b"/lib/modules/6.1.0-56-amd64/kernel/a.ko\n"
                                             b"/lib/modules/6.1.0-56-amd64/kernel/b.ko\n")
    assert members["lib/modules/6.1.0-56-amd64/modules.dep"][2].startswith(b"kernel/b.ko")
    assert b"obtain_device_list_from_udev = 0" in members["etc/lab/lvm.conf"][2]
    assert b"udev_sync = 0" in members["etc/lab/lvm.conf"][2]
    assert members["lab/bin/mdadm"][2] == b"MD"
    for directory in ("dev", "proc", "sys", "newroot", "lib", "lib/modules"):
        assert stat.S_ISDIR(members[directory][1])


def test_boot_module_missing_from_tree_is_an_error():
    with pytest.raises(ValueError, match="not in the module tree"):
        initramfs.entries(_contents(boot_modules=["kernel/zzz.ko"]))


def test_init_script_markers_filled_in():
    script = initramfs.init_script()
    assert "@" not in script.replace("$@", "")
    assert initramfs.READY in script and initramfs.DONE in script and initramfs.FAIL in script


def _elf_with_program_headers(types: list[int]) -> bytes:
    header = bytearray(64)
    header[:4] = b"\x7fELF"
    header[4] = 2
    struct.pack_into("<Q", header, 0x20, 64)
    struct.pack_into("<HH", header, 0x36, 56, len(types))
    table = b"".join(struct.pack("<I", t) + b"\0" * 52 for t in types)
    return bytes(header) + table


def test_is_static_elf():
    assert initramfs.is_static_elf(_elf_with_program_headers([1, 1]))
    assert not initramfs.is_static_elf(_elf_with_program_headers([6, 3, 1]))
    assert not initramfs.is_static_elf(b"#!/bin/sh\n")
