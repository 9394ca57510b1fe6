"""`apply` of a recipe on two existing directories (nothing is built, no root needed): every
operation it stores is named as its plan named it (recipe/naming.py, the one owner), and the
run stores what each of its workloads can do (workloads/capabilities.py)."""

from __future__ import annotations

import json
from pathlib import Path

from backupbench import plan as plan_mod
from backupbench.recipe import model
from backupbench.results.model import new_run_id

RECIPE = """
name = "names"

[[layout]]
name = "a"
kind = "directory"
path = "{a}"

[[layout]]
name = "b"
kind = "directory"
path = "{b}"

[[workload]]
kind = "kb2014"
operations = ["active-full", "restore-random"]
size = "16MiB"
runtime = "1s"
ramp = 0

[[workload]]
kind = "smallfiles"
files = 20
file_size = "4KiB"
folders = 2
patterns = [0, 1]
"""


def test_apply_stores_the_operations_its_plan_names_and_the_workloads_capabilities(cli, tmp_path: Path):
    folders = {name: tmp_path / name for name in ("a", "b")}
    for folder in folders.values():
        folder.mkdir()
    recipe = tmp_path / "names.toml"
    recipe.write_text(RECIPE.format(**folders))
    planned = plan_mod.make(model.load(recipe), new_run_id(), plan_mod.PlanOptions())[0].operations()
    assert planned == [f"{layout}/{group}/{phase}" for layout in ("a", "b")
                       for group, phases in (("1-kb2014", ("layout", "active-full", "restore-random")),
                                             ("2-smallfiles", ("create", "update-1")))
                       for phase in phases]
    # A name the plan knows is a gate apply takes before it runs anything.
    result = cli("apply", str(recipe), "--json", "--quiet", "--expect", "b/2-smallfiles/create>=1files/s")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    stored = [phase["name"] for phase in document["phases"]]
    # The layout phase runs unmeasured (it only writes the test file): planned, never stored.
    assert stored == [name for name in planned if not name.endswith("/layout")]
    assert document["run"]["settings"]["capabilities"] == {"kb2014": ["fio_servers", "kb2014_operations"],
                                                           "smallfiles": []}
    refused = cli("apply", str(recipe), "--json", "--quiet", "--expect", "b/2-smallfiles/verify>=1files/s")
    assert refused.returncode != 0 and "has no phase 'b/2-smallfiles/verify'" in refused.stderr
