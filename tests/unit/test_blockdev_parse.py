"""Pure parsers for block-device tools, over recorded output (lab VM fixtures and this host)."""

from __future__ import annotations

import json

import pytest

from backupbench.devices.probe_parse import (
    MdMember, Signature, parse_blkid_export, parse_lsblk_json, parse_mdstat, parse_pvs_json, parse_swaps,
    parse_wipefs_json, parse_wipefs_json_by_device,
)

LAB = "lab-guest"

# Recorded on the Debian 12 host (util-linux 2.38.1): `wipefs --no-act --json` of a 64 MiB loop
# device after `mkswap` and then an md 1.2 superblock written at 4 KiB.
WIPEFS_MD_AND_SWAP = """{
   "signatures": [
      {
         "device": "loop0",
         "offset": "0x1000",
         "type": "linux_raid_member",
         "uuid": "731eeb84-0b7e-4648-bde3-a6e70ad2990a",
         "label": "backupbench-test:0"
      },{
         "device": "loop0",
         "offset": "0xff6",
         "type": "swap",
         "uuid": "32881f65-6ae8-4642-a602-ac698706b6c7",
         "label": null
      }
   ]
}
"""
# ... after `sfdisk` wrote a GPT: primary, backup at the end, and the protective MBR.
WIPEFS_GPT = """{
   "signatures": [
      {"device": "loop0", "offset": "0x200", "type": "gpt", "uuid": null, "label": null},
      {"device": "loop0", "offset": "0x3fffe00", "type": "gpt", "uuid": null, "label": null},
      {"device": "loop0", "offset": "0x1fe", "type": "PMBR", "uuid": null, "label": null}
   ]
}
"""
WIPEFS_BLANK = '{\n   "signatures": [\n\n   ]\n}\n'
# `blkid --probe -o export` of the same md + swap device: one type only (blkid stops at RAID).
BLKID_MD = """DEVNAME=/dev/loop0
UUID=731eeb84-0b7e-4648-bde3-a6e70ad2990a
UUID_SUB=b04dda3b-156e-4965-9898-710ee8def9a1
LABEL=backupbench-test:0
VERSION=1.2
TYPE=linux_raid_member
USAGE=raid
"""
BLKID_PV = """DEVNAME=/dev/loop0
UUID=kuo4We-V2lj-9HWw-4NDy-sG12-6CAL-K03a6b
VERSION=LVM2\\ 001
TYPE=LVM2_member
USAGE=raid
"""
BLKID_GPT = "DEVNAME=/dev/loop0\nPTUUID=7de4f345-b9eb-a147-9461-094c32fe8565\nPTTYPE=gpt\n"


def test_lsblk_lab_tree_is_flattened_once_per_device(fixtures):
    devices = parse_lsblk_json((fixtures / LAB / "lsblk.json").read_text())
    names = [d.kname for d in devices]
    assert len(names) == len(set(names))
    assert names[:2] == ["vda", "dm-1"]
    assert {f"vd{c}" for c in "abcdefgh"} <= set(names)
    by_name = {d.kname: d for d in devices}
    vda = by_name["vda"]
    assert (vda.type, vda.size_bytes, vda.major_minor, vda.read_only, vda.rotational) == (
        "disk", 4 * 1024**3, "254:0", False, True)
    assert vda.children == ("dm-1", "dm-3", "dm-7", "dm-8")
    assert by_name["dm-0"].mountpoints == ("/mnt/lin",) and by_name["dm-0"].name == "vg0-lin"
    assert by_name["dm-5"].read_only is True            # the thin pool's own device is read-only
    assert by_name["md0"].type == "raid6" and by_name["md0"].parent == "vde"
    assert by_name["vdh"].children == ("md0",) and by_name["vdh"].mountpoints == ()


def test_lsblk_before_2_37_single_mountpoint_and_string_booleans():
    text = json.dumps({"blockdevices": [{"name": "sda", "kname": "sda", "type": "disk", "size": "1000",
                                         "ro": "0", "rota": "1", "mountpoint": None, "children": [
                                             {"name": "sda1", "kname": "sda1", "type": "part", "size": "500",
                                              "ro": "1", "rota": "1", "mountpoint": "/boot"}]}]})
    sda, sda1 = parse_lsblk_json(text)
    assert (sda.read_only, sda.rotational, sda.size_bytes, sda.mountpoints) == (False, True, 1000, ())
    assert (sda1.read_only, sda1.mountpoints, sda1.parent) == (True, ("/boot",), "sda")


@pytest.mark.parametrize("text", ["", "not json", '{"devices": []}', '{"blockdevices": [{"size": 1}]}'])
def test_lsblk_garbage_is_an_error(text):
    with pytest.raises(ValueError):
        parse_lsblk_json(text)


def test_wipefs_lists_every_signature_with_byte_offsets():
    assert parse_wipefs_json(WIPEFS_MD_AND_SWAP) == [
        Signature("linux_raid_member", 0x1000, "731eeb84-0b7e-4648-bde3-a6e70ad2990a", "backupbench-test:0"),
        Signature("swap", 0xFF6, "32881f65-6ae8-4642-a602-ac698706b6c7", None),
    ]
    gpt = parse_wipefs_json(WIPEFS_GPT)
    assert [(s.type, s.offset) for s in gpt] == [("gpt", 512), ("gpt", 64 * 1024**2 - 512), ("PMBR", 510)]
    assert all(s.is_partition_table for s in gpt)
    assert parse_wipefs_json(WIPEFS_BLANK) == [] and parse_wipefs_json("") == []


def test_wipefs_garbage_is_an_error():
    with pytest.raises(ValueError):
        parse_wipefs_json('{"signatures": [{"offset": "0x0"}]}')
    with pytest.raises(ValueError):
        parse_wipefs_json('{"signatures": ["xfs"]}')


def test_wipefs_over_several_devices_groups_the_signatures_by_the_name_it_gives_each():
    text = ('{"signatures": [{"device": "loop0", "offset": "0x438", "type": "ext4"},'
            ' {"device": "vdb", "offset": "0x1000", "type": "linux_raid_member"},'
            ' {"device": "vdb", "offset": "0xff6", "type": "swap"}]}')
    assert parse_wipefs_json_by_device(text) == {
        "loop0": [Signature("ext4", 0x438)],
        "vdb": [Signature("linux_raid_member", 0x1000), Signature("swap", 0xFF6)]}
    assert parse_wipefs_json_by_device(WIPEFS_BLANK) == {} and parse_wipefs_json_by_device("") == {}
    with pytest.raises(ValueError, match="names no device"):   # cannot say whose it is
        parse_wipefs_json_by_device('{"signatures": [{"offset": "0x0", "type": "xfs"}]}')


def test_blkid_export_types_and_partition_tables():
    assert parse_blkid_export(BLKID_MD) == [
        Signature("linux_raid_member", None, "731eeb84-0b7e-4648-bde3-a6e70ad2990a", "backupbench-test:0")]
    assert parse_blkid_export(BLKID_PV)[0].type == "LVM2_member"   # the escaped 'LVM2\ 001' parses
    assert parse_blkid_export(BLKID_GPT) == [Signature("gpt", None, "7de4f345-b9eb-a147-9461-094c32fe8565")]
    assert parse_blkid_export("") == []
    with pytest.raises(ValueError):
        parse_blkid_export("/dev/vdh: TYPE=\"swap\"")


def test_pvs_lab(fixtures):
    pvs = parse_pvs_json((fixtures / LAB / "pvs.json").read_text())
    assert [(p.pv_name, p.vg_name, p.size_bytes) for p in pvs] == [
        (f"/dev/vd{c}", "vg0", 4290772992) for c in "abcd"]


def test_pvs_without_vg_and_empty():
    text = '{"report": [{"pv": [{"pv_name":"/dev/loop0", "vg_name":"", "pv_size":"67108864"}]}]}'
    assert parse_pvs_json(text)[0].vg_name is None
    assert parse_pvs_json('{"report": [{"pv": []}]}') == []


def test_mdstat_lab(fixtures):
    (md0,) = parse_mdstat((fixtures / LAB / "mdstat.txt").read_text())
    assert (md0.name, md0.state, md0.level) == ("md0", "active", "raid6")
    assert [(m.kname, m.role) for m in md0.members] == [("vdh", 3), ("vdg", 2), ("vdf", 1), ("vde", 0)]


def test_mdstat_inactive_spares_faulty_and_auto_read_only():
    text = """Personalities : [raid1]
md127 : inactive sdb[0](S)
      1048576 blocks super 1.2

md1 : active (auto-read-only) raid1 nvme0n1p2[1] sdc1[0] sdd1[2](F)(W)
      1048512 blocks super 1.2 [2/2] [UU]

unused devices: <none>
"""
    md127, md1 = parse_mdstat(text)
    assert (md127.state, md127.level, md127.members) == ("inactive", None, (MdMember("sdb", 0, ("S",)),))
    assert md1.level == "raid1"
    assert md1.members[0] == MdMember("nvme0n1p2", 1, ())
    assert md1.members[2] == MdMember("sdd1", 2, ("F", "W"))
    assert parse_mdstat("Personalities : \nunused devices: <none>\n") == []


def test_swaps(fixtures):
    assert parse_swaps((fixtures / LAB / "swaps.txt").read_text()) == []
    text = ("Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
            "/dev/loop0                              partition\t65532\t\t0\t\t-2\n"
            "/srv/swap\\040file                       file\t\t1024\t\t0\t\t-3\n")
    assert [(s.path, s.kind) for s in parse_swaps(text)] == [("/dev/loop0", "partition"), ("/srv/swap file", "file")]
