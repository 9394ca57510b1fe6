"""One layout model (layout_model.py): the recipe's layouts, the fault rules and `size` take a
layout's redundancy, its fewest members and its software's defaults from the one place, so the
three disagreements of issue 41 cannot come back."""

from __future__ import annotations

import pytest

from backupbench import layout_model
from backupbench.errors import InputError, RecipeError
from backupbench.recipe import model
from backupbench.sizing.capacity import LayoutSpec, usable_capacity
from backupbench.sizing.recipe_plan import recipe_candidates

DISKS = [f"/dev/vd{letter}" for letter in "abcdefgh"]
TB = 10**12


def _layout(entry: dict):
    workload = {"kind": "s3", "objects": 10} if entry["kind"] == "minio-ec" else {"kind": "kb2014"}
    recipe = model.parse({"name": "m", "devices": DISKS, "layout": [{"name": "x", **entry}], "workload": [workload]})
    return recipe.layout[0]


def _refusal(entry: dict) -> str:
    with pytest.raises(RecipeError) as caught:
        _layout(entry)
    return caught.value.message


def _size(layout: str, disks: int, **params):
    return usable_capacity(LayoutSpec(layout, (6 * TB,) * disks, **params))


def test_minio_ec_without_parity_is_minio_s_default_everywhere():
    """The recipe said parity 1 where MinIO picks EC:2 on 4 drives, so `fail = 2` was refused
    ('parity 1') while `size capacity` said the layout survives 2."""
    four = _layout({"kind": "minio-ec", "devices": DISKS[:4]})
    assert four.redundancy() == _size("minio-ec", 4).failures_tolerated == 2
    assert four.fault_facts().erasure_parity == 2
    # Two of four drives gone at EC:2: the data survives, the writes do not (write quorum 3).
    message = _refusal({"kind": "minio-ec", "devices": DISKS[:4], "fault": {"fail": 2}})
    assert "without write quorum (3 drives)" in message and "parity 1" not in message
    # Six drives, EC:3: failing two is a fault MinIO survives and writes through.
    six = _layout({"kind": "minio-ec", "devices": DISKS[:6], "fault": {"fail": 2}})
    assert six.redundancy() == _size("minio-ec", 6).failures_tolerated == 3


def test_minio_ec_drive_counts_and_parity_minio_refuses_are_refused_in_the_recipe():
    assert layout_model.minio_set_size(17) is None
    eight = _layout({"kind": "minio-ec", "devices": DISKS})
    assert eight.fault_facts().erasure_set == 8
    assert "more than half of a 4-drive erasure set" in _refusal(
        {"kind": "minio-ec", "devices": DISKS[:4], "parity": 3})


def test_btrfs_metadata_profile_bounds_what_the_layout_survives_in_size_too():
    """Data raid1 with metadata single was planned as a candidate, yet its fault was refused."""
    entry = {"kind": "btrfs", "devices": DISKS[:3], "data": "raid1", "metadata": "single"}
    assert _layout(entry).redundancy() == 0
    assert "has none (data raid1, metadata single)" in _refusal({**entry, "fault": {"fail": 1}})
    spec = LayoutSpec("btrfs-raid1", (6 * TB,) * 3, btrfs_metadata="single")
    assert usable_capacity(spec).failures_tolerated == 0
    candidates, notes = recipe_candidates([_layout(entry).model_dump(mode="json"),
                                           {"name": "z", "kind": "zfs", "vdev": "raidz2", "devices": DISKS[:6]}],
                                          6, 16 * TB)
    assert [c.layout for c in candidates] == ["raidz2"]
    assert "layout x (btrfs-raid1) is not a candidate: a failed disk loses the backups" in notes
    # As redundant as the data, the same layout is one, surviving what both profiles survive.
    both = _layout({**entry, "metadata": "raid1"})
    assert both.redundancy() == usable_capacity(LayoutSpec("btrfs-raid1", (6 * TB,) * 3)).failures_tolerated == 1


@pytest.mark.parametrize("level", [0, 1, 5, 6, 10])
def test_md_minimum_members_are_the_same_for_the_recipe_and_size(level):
    fewest = layout_model.MD_MIN_MEMBERS[level]
    _layout({"kind": "mdraid", "level": level, "devices": DISKS[:fewest]})
    _size(f"raid{level}", fewest)
    message = _refusal({"kind": "mdraid", "level": level, "devices": DISKS[:fewest - 1]})
    assert f"RAID {level} needs at least {fewest} devices" in message
    with pytest.raises(InputError, match=f"raid{level} needs at least {fewest} disks"):
        _size(f"raid{level}", fewest - 1)


@pytest.mark.parametrize("vdev", ["raidz1", "raidz2", "raidz3"])
def test_raidz_minimum_members_are_the_same_for_the_recipe_and_size(vdev):
    fewest = layout_model.ZFS_MIN_MEMBERS[vdev]
    assert _layout({"kind": "zfs", "vdev": vdev, "devices": DISKS[:fewest]}).redundancy() == \
        _size(vdev, fewest).failures_tolerated
    assert f"needs at least {fewest} devices" in _refusal({"kind": "zfs", "vdev": vdev, "devices": DISKS[:fewest - 1]})
    with pytest.raises(InputError, match=f"needs at least {fewest} disks"):
        _size(vdev, fewest - 1)


def test_btrfs_needs_the_devices_both_its_profiles_need():
    assert "needs at least 3 devices" in _refusal({"kind": "btrfs", "devices": DISKS[:2], "data": "raid1",
                                                   "metadata": "raid1c3"})
    with pytest.raises(InputError, match="needs at least 3 disks"):
        _size("btrfs-raid1", 2, btrfs_metadata="raid1c3")
