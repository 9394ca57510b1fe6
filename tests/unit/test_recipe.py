from pathlib import Path

import pytest

from backupbench.errors import RecipeError
from backupbench.recipe import model

EXAMPLES = Path(__file__).parents[2] / "examples"


def base(**layout):
    return {
        "name": "t", "devices": ["/dev/vda", "/dev/vdb", "/dev/vdc", "/dev/vdd"],
        "layout": [{"name": "l1", "kind": "lvm-striped", "devices": ["/dev/vda", "/dev/vdb"], **layout}],
        "workload": [{"kind": "kb2014", "size": "64MiB"}],
    }


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_every_example_recipe_loads(path):
    recipe = model.load(path)
    # Layouts built here, or other machines to run on ([hosts]): one or the other.
    assert bool(recipe.layout) != (recipe.hosts is not None) and recipe.workload


def test_sizes_parse_with_units():
    recipe = model.parse(base(stripe_size="128k"))
    assert recipe.layout[0].stripe_size == 128 * 1024


@pytest.mark.parametrize("change,expected", [
    ({"stripes": 3}, "layout[0]: stripes (3) cannot exceed the number of devices (2)"),
    ({"strpes": 2}, "layout[0].strpes: is not a known key; did you mean 'stripes'?"),
    ({"stripe_size": "big"}, "layout[0].stripe_size: not a size"),
    ({"kind": "lvm-mirror"}, "layout[0]: kind 'lvm-mirror' is not one of"),
    ({"name": "Bad Name"}, "layout[0].name:"),
])
def test_errors_name_the_key_path(change, expected):
    with pytest.raises(RecipeError) as raised:
        model.parse(base(**change))
    assert expected in raised.value.message


def test_devices_must_be_named_in_the_devices_list():
    data = base()
    data["devices"] = ["/dev/vda"]
    with pytest.raises(RecipeError, match="uses /dev/vdb, which \\[devices\\] does not name"):
        model.parse(data)


def test_workload_errors_and_duplicates():
    data = base()
    data["workload"] = [{"kind": "kb2014", "operations": ["nope"]}]
    with pytest.raises(RecipeError, match=r"workload\[0\].operations"):
        model.parse(data)
    data = base()
    data["layout"] = data["layout"] * 2
    with pytest.raises(RecipeError, match="layout names must be unique"):
        model.parse(data)


def test_raid_needs_enough_devices_and_snapshots_need_a_size():
    data = base()
    data["layout"] = [{"name": "r", "kind": "mdraid", "level": 6, "devices": ["/dev/vda", "/dev/vdb"]}]
    with pytest.raises(RecipeError, match="RAID 6 needs at least 4 devices"):
        model.parse(data)
    data["layout"] = [{"name": "s", "kind": "lvm-snapshot", "devices": ["/dev/vda"], "origin_size": "1GiB",
                       "snapshots": 1}]
    with pytest.raises(RecipeError, match="snapshot_size"):
        model.parse(data)


def test_file_errors(tmp_path):
    with pytest.raises(RecipeError, match="does not exist"):
        model.load(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    with pytest.raises(RecipeError, match="not valid TOML"):
        model.load(bad)


def test_sizes_lvm_would_round_and_devices_named_twice_are_refused():
    with pytest.raises(RecipeError, match="stripe_size must be a power of two"):
        model.parse(base(stripe_size="64KB"))
    with pytest.raises(RecipeError, match="size: must be a whole number of KiB"):
        model.parse(base(size="1.5GB"))
    with pytest.raises(RecipeError, match="/dev/vda is named twice"):
        model.parse(base(devices=["/dev/vda", "/dev/vda"]))
