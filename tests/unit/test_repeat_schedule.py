"""Which layouts of a recipe alternate their repeats (runner/schedule.py): those that use no
device in common and have no fault, built together and measured round by round, the order
reversed each round; layouts sharing a device keep running one after another, and say so."""

from dataclasses import dataclass

from backupbench.runner.schedule import round_order, schedule


@dataclass(frozen=True)
class Layout:
    name: str
    devices: tuple[str, ...] = ()
    fault: object | None = None


def test_layouts_on_disjoint_devices_alternate_and_say_so():
    layouts = [Layout("a", ("/dev/loop1",)), Layout("b", ("/dev/loop2", "/dev/loop3"))]
    plan = schedule(layouts, [3, 1])
    assert plan.alternated == ("a", "b") and plan.one_by_one == () and plan.rounds == 3
    assert plan.note.startswith("repeats: layouts a, b use no device in common")
    assert "round 1: a, b; round 2: b, a" in plan.note


def test_layouts_without_devices_alternate():
    plan = schedule([Layout("here"), Layout("there"), Layout("disk", ("/dev/loop1",))], [2])
    assert plan.alternated == ("here", "there", "disk") and plan.rounds == 2


def test_a_shared_device_keeps_layouts_back_to_back_and_names_it():
    layouts = [Layout("a", ("/dev/loop1", "/dev/loop2")), Layout("b", ("/dev/loop3",)),
               Layout("c", ("/dev/loop2",))]
    plan = schedule(layouts, [3])
    assert plan.alternated == () and plan.one_by_one == ("a", "b", "c")
    assert plan.note.startswith("repeats: each layout's 3 samples ran back to back")
    assert "a and c both use /dev/loop2" in plan.note


def test_fault_layouts_run_on_their_own_after_the_alternated_ones():
    layouts = [Layout("raid", ("/dev/loop1",), fault="fail one"), Layout("a", ("/dev/loop2",)),
               Layout("b", ("/dev/loop3",))]
    plan = schedule(layouts, [2])
    assert plan.alternated == ("a", "b") and plan.one_by_one == ("raid",)
    assert "raid (with a fault: its states run in order) was built, measured and torn down on its own" in plan.note


def test_a_fault_layout_may_share_devices_with_the_alternated_ones():
    # It is built only after they are torn down.
    layouts = [Layout("a", ("/dev/loop1",)), Layout("b", ("/dev/loop2",)),
               Layout("raid", ("/dev/loop1", "/dev/loop2"), fault="fail one")]
    assert schedule(layouts, [2]).alternated == ("a", "b")


def test_one_layout_besides_a_fault_layout_cannot_alternate():
    plan = schedule([Layout("raid", ("/dev/loop1",), fault="fail one"), Layout("a", ("/dev/loop2",))], [2])
    assert plan.alternated == () and plan.one_by_one == ("raid", "a")
    assert "raid has a fault" in plan.note and "back to back" in plan.note


def test_one_layout_or_one_sample_keeps_the_plain_order_without_a_note():
    for layouts, repeats in (([Layout("a", ("/dev/loop1",))], [3]),
                             ([Layout("a", ("/dev/loop1",)), Layout("b", ("/dev/loop2",))], [1, 1]),
                             ([Layout("a", ("/dev/loop1",)), Layout("b", ("/dev/loop2",))], [])):
        plan = schedule(layouts, repeats)
        assert plan.alternated == () and plan.note is None and plan.rounds == 1
        assert plan.one_by_one == tuple(layout.name for layout in layouts)


def test_each_round_reverses_the_order_of_the_one_before():
    names = ("a", "b", "c")
    assert [round_order(names, r) for r in (1, 2, 3, 4)] == [
        ("a", "b", "c"), ("c", "b", "a"), ("a", "b", "c"), ("c", "b", "a")]
    # Over two rounds every layout has as many earlier places as later ones.
    for name in names:
        places = [round_order(names, r).index(name) for r in (1, 2)]
        assert sum(places) == len(names) - 1


def test_the_plan_says_beforehand_what_the_run_will_say_afterwards():
    alternating = [Layout("raid", ("/dev/loop1",), fault="fail one"), Layout("a", ("/dev/loop2",)),
                   Layout("b", ("/dev/loop3",))]
    planned, done = schedule(alternating, [2], planned=True), schedule(alternating, [2])
    assert planned.alternated == done.alternated and planned.one_by_one == done.one_by_one
    assert "so they will be built together and measured in 2 rounds" in planned.note
    assert "raid (with a fault: its states run in order) will be built, measured and torn down" in planned.note
    assert "were built" in done.note and "will" not in done.note
    shared = [Layout("a", ("/dev/loop1",)), Layout("b", ("/dev/loop1",))]
    assert schedule(shared, [3], planned=True).note.startswith("repeats: each layout's 3 samples will run back to back")


def test_plan_prints_and_documents_the_order(tmp_path):
    """The plan of two directory layouts with repeat = 3: the order in the text and in --json;
    without repeats, neither."""
    from rich.console import Console

    from backupbench.layouts.capabilities import HostCapabilities
    from backupbench.plan import build
    from backupbench.recipe import model
    from backupbench.report import plan_view

    layouts = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        layouts.append({"name": name, "kind": "directory", "path": str(tmp_path / name)})

    def planned(repeat: int):
        recipe = model.parse({"name": "alt", "layout": layouts,
                              "workload": [{"kind": "first-write", "size": "16MiB", "repeat": repeat}]})
        return build(recipe, "20261126T000000-order000", HostCapabilities(frozenset(), frozenset()), lambda device: [])

    console = Console(record=True, width=300)
    console.print(plan_view.render(planned(3)))
    assert "order: repeats: layouts a, b use no device in common, so they will be built together" in console.export_text()
    assert plan_view.as_dict(planned(3))["order"].startswith("repeats: layouts a, b")
    assert plan_view.as_dict(planned(1))["order"] is None
