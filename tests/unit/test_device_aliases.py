"""Devices are compared by identity (device number, links followed), not by spelling: two names
of one disk in a recipe are refused by `plan` before `apply` formats anything (issue 23).
Pure tests over recorded identities, and over a recorded tree of links (Host(root=...))."""

from __future__ import annotations

import os

from backupbench.devices import identity
from backupbench.devices.identity import DeviceIdentity, aliases, alias_problem
from backupbench.devices.probe_host import Host
from backupbench.layouts.capabilities import HostCapabilities
from backupbench.plan import build
from backupbench.recipe import model
from backupbench.report import plan_view

RUN = "20261125T000000-aliases0"
EVERYTHING = HostCapabilities(kernel=frozenset({"fs:btrfs", "fs:xfs", "md", "raid456"}),
                              tools=frozenset({"mkfs.btrfs", "btrfs", "mkfs.xfs", "mdadm"}))
# As Host.path_info saw them on a machine: /dev/loop8, a link to it in a test's folder, the
# by-id name udev made for it, a second node made with mknod for the same number, and loop9.
RECORDED = {
    "/dev/loop8": DeviceIdentity("/dev/loop8", "/dev/loop8", "7:8"),
    "/tmp/t/link": DeviceIdentity("/tmp/t/link", "/dev/loop8", "7:8"),
    "/dev/disk/by-id/loop-x": DeviceIdentity("/dev/disk/by-id/loop-x", "/dev/loop8", "7:8"),
    "/tmp/t/node": DeviceIdentity("/tmp/t/node", "/tmp/t/node", "7:8"),
    "/dev/loop9": DeviceIdentity("/dev/loop9", "/dev/loop9", "7:9"),
    "/dev/gone": DeviceIdentity("/dev/gone", "/dev/gone", None),
    "/tmp/t/to-gone": DeviceIdentity("/tmp/t/to-gone", "/dev/gone", None),
}


def recipe(devices: list[str], layout_devices: list[str] | None = None, kind: str = "btrfs"):
    layout = {"name": "b", "kind": kind, "devices": layout_devices or devices}
    return model.parse({"name": "t", "devices": devices, "layout": [layout], "workload": [{"kind": "kb2014"}]})


def test_spellings_of_one_device_are_grouped_by_number_and_by_where_links_lead():
    groups = aliases(["/dev/loop8", "/dev/loop9", "/tmp/t/link", "/tmp/t/node", "/dev/gone", "/tmp/t/to-gone"],
                     RECORDED.__getitem__)
    assert [[i.path for i in group] for group in groups] == [
        ["/dev/loop8", "/tmp/t/link", "/tmp/t/node"], ["/dev/gone", "/tmp/t/to-gone"]]
    assert aliases(["/dev/loop8", "/dev/loop9", "/dev/loop8"], RECORDED.__getitem__) == []


def test_the_refusal_names_every_spelling_and_what_they_lead_to():
    [group] = aliases(["/dev/loop8", "/tmp/t/link"], RECORDED.__getitem__)
    assert alias_problem(group).startswith("/dev/loop8 and /tmp/t/link are one device (/dev/loop8, 7:8); "
                                           "name each device one way in the recipe")
    [group] = aliases(["/dev/loop8", "/tmp/t/link", "/dev/disk/by-id/loop-x"], RECORDED.__getitem__)
    assert alias_problem(group).startswith("/dev/loop8, /tmp/t/link and /dev/disk/by-id/loop-x are one device")


def test_plan_refuses_a_layout_that_names_one_device_twice():
    data = recipe(["/dev/loop8", "/tmp/t/link"])
    plan = build(data, RUN, EVERYTHING, lambda device: [], identify=RECORDED.__getitem__)
    assert plan.refusals == ["devices: /dev/loop8 and /tmp/t/link are one device (/dev/loop8, 7:8); name each "
                             "device one way in the recipe (keep one of the names), or a layout could format it twice"]
    assert plan_view.as_dict(plan)["refusals"] == plan.refusals
    # Without the host asked, spellings are all there is: the plan of a pure test stays pure.
    assert build(data, RUN, EVERYTHING, lambda device: []).refusals == []


def test_two_names_of_one_device_in_different_layouts_or_only_in_devices_are_refused_too():
    # Harmless today (layouts are built one after the other), but every other check of the
    # recipe compares spellings: one device, one name keeps them all true.
    data = model.parse({"name": "t", "devices": ["/dev/loop8", "/dev/loop9", "/tmp/t/node"],
                        "layout": [{"name": "a", "kind": "filesystem", "devices": ["/dev/loop8"]},
                                   {"name": "b", "kind": "filesystem", "devices": ["/dev/loop9"]}],
                        "workload": [{"kind": "kb2014"}]})
    plan = build(data, RUN, EVERYTHING, lambda device: [], identify=RECORDED.__getitem__)
    assert [r.split(" are one")[0] for r in plan.refusals] == ["devices: /dev/loop8 and /tmp/t/node"]


def test_a_fault_replacement_that_is_a_member_under_another_name_is_refused():
    devices = ["/dev/loop8", "/dev/loop9", "/dev/loop10", "/dev/loop11"]
    recorded = {**RECORDED, **{d: DeviceIdentity(d, d, f"7:{d[-2:]}") for d in devices[2:]},
                "/tmp/t/spare": DeviceIdentity("/tmp/t/spare", "/dev/loop9", "7:9")}
    data = model.parse({"name": "t", "devices": [*devices, "/tmp/t/spare"],
                        "layout": [{"name": "r", "kind": "mdraid", "level": 6, "devices": devices,
                                    "fault": {"fail": ["/dev/loop8"], "replace": ["/tmp/t/spare"]}}],
                        "workload": [{"kind": "kb2014"}]})
    plan = build(data, RUN, EVERYTHING, lambda device: [], identify=recorded.__getitem__)
    assert any(r.startswith("devices: /dev/loop9 and /tmp/t/spare are one device") for r in plan.refusals)


def test_identify_follows_links_in_a_recorded_tree(tmp_path):
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "disk-file").write_text("")
    os.symlink("disk-file", tmp_path / "dev" / "link")
    os.symlink("nowhere", tmp_path / "dev" / "dangling")
    host = Host(root=str(tmp_path))
    link, file = identity.identify("/dev/link", host), identity.identify("/dev/disk-file", host)
    assert (link.resolved, link.number) == ("/dev/disk-file", None) and link.key == file.key
    assert identity.identify("/dev/dangling", host).resolved == "/dev/nowhere"
    assert [[i.path for i in g] for g in aliases(["/dev/disk-file", "/dev/link", "/dev/dangling"],
                                                 lambda p: identity.identify(p, host))] == [["/dev/disk-file", "/dev/link"]]
