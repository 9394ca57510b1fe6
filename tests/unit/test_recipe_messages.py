"""What a recipe's key and value errors say (issue 23): a suggestion is never the key itself,
a misspelt required key is named with the key it stands for, a TOML date is shown as TOML
writes it, and a byte-order mark at the start of the file is dropped."""

from __future__ import annotations

import codecs
import copy
import datetime

import pytest

from backupbench.errors import RecipeError
from backupbench.recipe import keys, model
from backupbench.schema import shown

BASE = {
    "name": "t", "devices": ["/dev/vda", "/dev/vdb", "/dev/vdc", "/dev/vdd"],
    "layout": [{"name": "l1", "kind": "lvm-linear", "devices": ["/dev/vda", "/dev/vdb"]},
               {"name": "r6", "kind": "mdraid", "level": 6, "devices": ["/dev/vda", "/dev/vdb", "/dev/vdc", "/dev/vdd"],
                "fault": {"fail": 1}}],
    "workload": [{"kind": "kb2014", "size": "64MiB"}],
}


def refusal(change) -> str:
    data = copy.deepcopy(BASE)
    change(data)
    with pytest.raises(RecipeError) as raised:
        model.parse(data, "r.toml")
    return raised.value.message


def test_a_key_of_another_kind_is_said_to_be_one_not_suggested_as_itself():
    message = refusal(lambda d: d["layout"][0].update(profile="default"))
    assert message == "r.toml: layout[0].profile: is not a known key; it is a key of s3 workloads, not of lvm-linear layouts"
    message = refusal(lambda d: d["layout"][0].update(stripes=2))
    assert message.endswith("it is a key of lvm-striped layouts, not of lvm-linear layouts")
    message = refusal(lambda d: d["workload"][0].update(level=6))
    assert message.endswith("it is a key of mdraid layouts, not of kb2014 workloads")
    message = refusal(lambda d: d.update(monitor_interval="2s"))
    assert message.endswith("it is a key of [monitor]")


def every_key() -> set[str]:
    found: set[str] = set()

    def visit(model_class, seen):
        for name, field in model_class.model_fields.items():
            found.add(name)
            for member in keys._models(field.annotation):
                if member not in seen:
                    seen.add(member)
                    visit(member, seen)
    visit(model.Recipe, {model.Recipe})
    return found


@pytest.mark.parametrize("where", ["top", "layout", "filesystem", "fault", "workload", "monitor"])
def test_no_key_is_ever_suggested_as_itself(where):
    places = {"top": lambda d: d, "layout": lambda d: d["layout"][0],
              "filesystem": lambda d: d["layout"][0].setdefault("filesystem", {}),
              "fault": lambda d: d["layout"][1]["fault"], "workload": lambda d: d["workload"][0],
              "monitor": lambda d: d.setdefault("monitor", {})}
    checked = 0
    for key in sorted(every_key()):
        data = copy.deepcopy(BASE)
        table = places[where](data)
        if key in table:
            continue
        table[key] = "x"
        try:
            model.parse(data, "r.toml")
        except RecipeError as exc:
            assert f"did you mean {key!r}" not in exc.message, exc.message
            checked += 1
    assert checked > 50


@pytest.mark.parametrize("change,expected", [
    (lambda d: d.update(namee=d.pop("name")),
     "r.toml: namee: is not a known key; did you mean 'name'? ('name' is required and missing)"),
    (lambda d: d["layout"][0].update(namee=d["layout"][0].pop("name")),
     "r.toml: layout[0].namee: is not a known key; did you mean 'name'?"),
    (lambda d: d["layout"][0].update(kindd=d["layout"][0].pop("kind")),
     "r.toml: layout[0].kindd: is not a known key; did you mean 'kind'? ('kind' is required and missing)"),
    (lambda d: d["workload"][0].update(kidn=d["workload"][0].pop("kind")),
     "r.toml: workload[0].kidn: is not a known key; did you mean 'kind'?"),
    (lambda d: d["layout"][1]["fault"].update(fali=d["layout"][1]["fault"].pop("fail")),
     "r.toml: layout[1].fault.fali: is not a known key; did you mean 'fail'?"),
    (lambda d: d.update(worklaod=d.pop("workload")),
     "r.toml: worklaod: is not a known key; did you mean 'workload'?"),
    # Nothing like the missing key: the unknown one is still named, and the missing one too.
    (lambda d: d["layout"][0].update(title=d["layout"][0].pop("name")),
     "r.toml: layout[0].title: is not a known key, and the required key 'name' is missing"),
])
def test_a_misspelt_required_key_names_the_unknown_key_and_the_missing_one(change, expected):
    assert refusal(change).startswith(expected)


def test_a_missing_key_with_nothing_unknown_beside_it_is_just_missing():
    assert refusal(lambda d: d["layout"][0].pop("name")) == "r.toml: layout[0].name: Field required"
    assert refusal(lambda d: d["layout"][0].pop("kind")) == "r.toml: layout[0]: needs a kind"


@pytest.mark.parametrize("value,written", [
    (datetime.date(2026, 1, 1), "2026-01-01"),
    (datetime.datetime(2026, 1, 1, 7, 32), "2026-01-01T07:32:00"),
    (datetime.datetime(2026, 1, 1, 7, 32, tzinfo=datetime.timezone.utc), "2026-01-01T07:32:00+00:00"),
    (datetime.time(7, 32), "07:32:00"),
])
def test_a_toml_date_is_shown_as_toml_writes_it(value, written):
    message = refusal(lambda d: d["workload"][0].update(size=value))
    assert message.startswith(f"r.toml: workload[0].size: {written} is a TOML date or time")
    assert "datetime" not in message
    assert shown(value) == written
    nested = refusal(lambda d: d["layout"][0].update(filesystem={"mount_options": ["noatime", value]}))
    assert nested.startswith(f"r.toml: layout[0].filesystem.mount_options[1]: {written} is a TOML date")


def test_a_utf8_byte_order_mark_is_dropped_and_others_named(tmp_path):
    text = 'name = "bom"\n[[layout]]\nname = "d"\nkind = "directory"\npath = "/srv"\n[[workload]]\nkind = "kb2014"\n'
    path = tmp_path / "bom.toml"
    path.write_bytes(codecs.BOM_UTF8 + text.encode())
    assert model.load(path).name == "bom"
    path.write_bytes(codecs.BOM_UTF8 + b'name = "caf\xe9"\n')
    with pytest.raises(RecipeError, match=r"line 1: byte 0xe9 is not UTF-8"):
        model.load(path)
    path.write_bytes(codecs.BOM_UTF16_LE + text.encode("utf-16-le"))
    with pytest.raises(RecipeError, match="is UTF-16 text") as raised:
        model.load(path)
    assert raised.value.fix == "save the recipe as UTF-8"
    # A mark anywhere else is not a byte-order mark: TOML says where it is.
    path.write_text(text + "\ufeffx = 1\n")
    with pytest.raises(RecipeError, match="not valid TOML"):
        model.load(path)


def test_key_paths_as_written():
    assert keys.key_path(("layout", 1, "lvm-striped", "stripes")) == "layout[1].stripes"
    assert keys.key_path(("layout", 1, "stripes"), tagged=False) == "layout[1].stripes"
    assert keys.key_path(("hosts", "a b")) == "hosts.'a b'"
