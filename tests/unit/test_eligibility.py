from dataclasses import replace

from backupbench import units
from backupbench.devices.eligibility import directory_cautions, directory_refusals
from backupbench.devices.facts import DirectoryFacts
from backupbench.hostfiles import find_mount, parse_mountinfo

GOOD = DirectoryFacts(
    path="/srv/repo", exists=True, is_dir=True, writable=True, free_bytes=100 * units.GiB,
    total_bytes=200 * units.GiB, fs_type="xfs", mount_point="/srv", source="/dev/sdb",
    block_device="sdb", read_only_mount=False, direct_io=True, direct_io_error=None,
)


def problems(facts, need=units.GiB, buffered=False):
    return [r.problem for r in directory_refusals(facts, need, buffered)]


def test_good_directory_passes():
    assert problems(GOOD) == []


def test_each_refusal_has_a_reason_and_fix():
    cases = {
        "does not exist": replace(GOOD, exists=False, is_dir=False),
        "not a directory": replace(GOOD, is_dir=False),
        "read-only": replace(GOOD, read_only_mount=True),
        "not writable": replace(GOOD, writable=False),
        "not enough free space": replace(GOOD, free_bytes=units.GiB),
        "refuses O_DIRECT": replace(GOOD, direct_io=False, fs_type="ramfs"),
    }
    for expected, facts in cases.items():
        reasons = directory_refusals(facts, units.GiB, False)
        assert reasons and expected in reasons[0].problem, expected
        assert reasons[0].fix


def test_buffered_accepts_a_filesystem_without_o_direct():
    assert problems(replace(GOOD, direct_io=False), buffered=True) == []


def test_unknown_free_space_is_not_a_refusal():
    assert problems(replace(GOOD, free_bytes=None, total_bytes=None)) == []


def test_cautions():
    assert any("small for this storage" in n for n in directory_cautions(GOOD, units.GiB, False, None))
    assert directory_cautions(GOOD, 20 * units.GiB, False, None) == []
    memory = directory_cautions(replace(GOOD, fs_type="tmpfs"), 20 * units.GiB, False, None)
    assert any("memory, not storage" in n for n in memory)
    buffered = directory_cautions(GOOD, 20 * units.GiB, True, 24 * units.GiB)
    assert any("page cache" in n for n in buffered) and any("twice the RAM" in n for n in buffered)


MOUNTINFO = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 0:26 / /dev/shm rw,nosuid shared:2 - tmpfs tmpfs rw
41 22 7:3 / /srv/my\\040repo ro,relatime - xfs /dev/loop3 ro
"""


def test_mountinfo_lookup():
    mounts = parse_mountinfo(MOUNTINFO)
    assert find_mount("/srv/my repo/x", mounts).major_minor == "7:3"
    assert find_mount("/srv/my repo/x", mounts).read_only
    assert find_mount("/dev/shm", mounts).fs_type == "tmpfs"
    assert find_mount("/home/x", mounts).fs_type == "ext4"
