"""Sweeps (issue 42 item 2), pure: the grid and its points (workloads/sweep.py), what a grid of
stored runs says (analysis/sweep.py: the best point, where adding parallelism stops paying),
the refusals of `sweep --over` and of a recipe's `sweep` key, and the --json document against
its shipped schema. The real sweep through fio is tests/integration/test_sweep_cli.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from backupbench import units
from backupbench.analysis import sweep as analysis
from backupbench.cli import sweep_cmd
from backupbench.cli.documents import checked
from backupbench.errors import InputError, RecipeError
from backupbench.recipe import model, naming
from backupbench.report.sweep import grid_tables, grid_title, missing_line
from backupbench.results import document
from backupbench.results.model import COMPLETE, FAILED, OperationRecord, RunRecord
from backupbench.workloads import sweep
from backupbench.workloads.registry import WORKLOADS

MiB = units.MiB
OTHERS = {name: d.options for name, d in WORKLOADS.items()}


# ---- stored runs as `backupbench sweep` leaves them ---------------------------------------------

def _op(phase: str, mib_s: list[float], p99_ms: float = 2.0) -> OperationRecord:
    """A phase measured len(mib_s) times (figures: the medians, as the store keeps them)."""
    values = [value * MiB for value in mib_s]
    samples = [{"effective_bw": value} for value in values] if len(values) > 1 else []
    median = sorted(values)[len(values) // 2]
    return OperationRecord(phase, "randread", status=COMPLETE,
                           figures={"effective_bw": median, "read_p99_lat": p99_ms * 1e6}, samples=samples)


def _runs(grid: dict[str, list[str]], measured: dict[str, list[float]], sweep_id: str = "1a2b3c4d",
          phase: str = "restore-random", status: str = COMPLETE) -> list[RunRecord]:
    """One run per point measured (`measured`: a point's text -> its samples in MiB/s), in the
    grid's order, each with the settings `backupbench sweep` stores."""
    parallel = sweep.parallel(list(grid), WORKLOADS["kb2014"].parallelism)
    runs = []
    for number, point in enumerate(sweep.points(grid), 1):
        if point.text not in measured:
            continue
        record = sweep.SweepRecord(sweep_id, "kb2014", grid, parallel, point, number)
        samples = measured[point.text]
        runs.append(RunRecord(f"run-{number}", "kb2014", "/srv/t", {**record.stored(), "repeat": len(samples)},
                              status=status, operations=[_op(phase, samples)], label=record.label))
    return runs


def _phase(grid: dict[str, list[str]], measured: dict[str, list[float]]) -> analysis.PhaseSweep:
    (found,) = analysis.analyse(analysis.from_runs(_runs(grid, measured)))
    return found


STEADY = {1: [100.0, 101.0, 99.0], 4: [200.0, 202.0, 198.0], 16: [300.0, 303.0, 297.0]}
# Around 4's 200 MiB/s, with intervals that overlap it: no gain beyond noise.
NOISY_SAME = [205.0, 190.0, 215.0]


# ---- the grid ------------------------------------------------------------------------------------

def test_points_are_every_combination_the_first_parameter_slowest():
    grid = {"iodepth": [1, 4, 16], "jobs": [1, 2]}
    found = sweep.points(grid)
    assert [p.text for p in found] == ["iodepth=1 jobs=1", "iodepth=1 jobs=2", "iodepth=4 jobs=1",
                                       "iodepth=4 jobs=2", "iodepth=16 jobs=1", "iodepth=16 jobs=2"]
    assert found[3].key == "iodepth=4,jobs=2" and found[3].as_dict() == {"iodepth": "4", "jobs": "2"}
    # The values as given go to the options model (a recipe's int stays an int), written as text.
    assert found[3].given_values() == {"iodepth": 4, "jobs": 2}
    assert sweep.points({"buffered": [True, False]})[0].text == "buffered=true"


def test_a_flag_and_a_key_name_the_same_parameter():
    assert sweep.parameter("--block-size") == sweep.parameter("block_size") == "block_size"


@pytest.mark.parametrize("grid,message,where", [
    ({}, "at least one parameter", ""),
    ({"iodepth": []}, "iodepth has no values", "iodepth"),
    ({"iodepth": ["1", ""]}, "iodepth has an empty value", "iodepth"),
    ({"iodepth": ["1", "4", "1"]}, "iodepth lists 1 twice", "iodepth"),
    ({"block_size": ["64KiB", "1/2MiB"]}, "cannot name a point", "block_size"),
    ({"iodepth": [str(n) for n in range(1, sweep.MAX_VALUES + 2)]}, f"at most {sweep.MAX_VALUES}", "iodepth"),
    ({"iodepth": [str(n) for n in range(1, 10)], "jobs": [str(n) for n in range(1, 9)]}, "the grid has 72 points",
     ""),
])
def test_a_grid_of_the_wrong_shape_is_refused_at_its_parameter(grid, message, where):
    with pytest.raises(sweep.SweepRefused, match=message) as refused:
        sweep.check_grid(grid)
    assert refused.value.where == where


@pytest.mark.parametrize("workload,name,hint", [
    ("kb2014", "iodeph", "did you mean 'iodepth'?"),
    ("kb2014", "concurrency", "it is an option of s3 workloads"),
    ("kb2014", "colour", ""),
    ("s3", "streams", "its parallelism: concurrency"),
    ("s3", "iodepth", "it is an option of kb2014"),
])
def test_a_parameter_the_workload_has_not_is_refused_with_what_was_meant(workload, name, hint):
    definition = WORKLOADS[workload]
    with pytest.raises(sweep.SweepRefused, match=f"the {workload} workload has no option '{name}'") as refused:
        sweep.check_parameters([name], workload, definition.options, OTHERS, definition.parallelism)
    assert hint in str(refused.value) and refused.value.where == name


def test_credentials_and_the_pipeline_keys_are_not_swept_but_the_parallelism_and_sizes_are():
    s3, kb2014 = WORKLOADS["s3"], WORKLOADS["kb2014"]
    with pytest.raises(sweep.SweepRefused, match="access_key is a credential"):
        sweep.check_parameters(["access_key"], "s3", s3.options, OTHERS, s3.parallelism)
    assert {"iodepth", "jobs", "block_size"} <= set(sweep.sweepable(kb2014.options))
    assert {"concurrency", "object_size"} <= set(sweep.sweepable(s3.options))
    assert not {"access_key", "secret_key", "kind", "repeat", "sweep"} & set(sweep.sweepable(s3.options))
    assert sweep.parallel(["block_size", "jobs", "iodepth"], kb2014.parallelism) == ("jobs", "iodepth")
    assert sweep.parallel(["object_size", "concurrency"], s3.parallelism) == ("concurrency",)


# ---- `backupbench sweep --over`, planned without running a point ------------------------------

def _planned(args: list[str]) -> list[tuple[sweep.Point, object]]:
    """What `sweep` checks before its first point, in the command's order (flags parsed by click)."""
    params = dict(sweep_cmd.sweep_command.make_context("sweep", list(args)).params)
    definition = WORKLOADS[params.pop("workload")]
    grid = sweep_cmd.parse_over(params.pop("over"))
    paths, preset, repeat = params.pop("paths"), params.pop("preset"), params.pop("repeat")
    for name in ("as_json", "html_file", "quiet", "results"):
        params.pop(name)
    _, values = sweep_cmd._paths(definition, paths, params)
    _, values = sweep_cmd._samples(definition, repeat, values)
    return sweep_cmd.plan_points(definition, preset, grid, values)


def test_kb2014_sweeps_block_size_with_iodepth_and_jobs(tmp_path):
    built = _planned([str(tmp_path), "--size", "64MiB", "--over", "block-size=256KiB,1MiB", "--over", "iodepth=1,8",
                      "--over", "jobs=1,2"])
    assert [point.text for point, _ in built][:3] == ["block_size=256KiB iodepth=1 jobs=1",
                                                      "block_size=256KiB iodepth=1 jobs=2",
                                                      "block_size=256KiB iodepth=8 jobs=1"]
    options = {point.text: opts for point, opts in built}
    chosen = options["block_size=1MiB iodepth=8 jobs=2"]
    assert (chosen.block_size, chosen.iodepth, chosen.jobs, chosen.size) == (MiB, 8, 2, 64 * MiB)
    assert options["block_size=256KiB iodepth=1 jobs=1"].block_size == 256 * 1024


def test_s3_sweeps_streams_as_concurrency_and_object_size():
    built = _planned(["--workload", "s3", "--endpoint", "http://127.0.0.1:9", "--bucket", "backups",
                      "--over", "concurrency=1,8", "--over", "object-size=1MiB,16MiB"])
    assert [(opts.concurrency, point.as_dict()["object_size"]) for point, opts in built] == [
        (1, "1MiB"), (1, "16MiB"), (8, "1MiB"), (8, "16MiB")]
    assert len({str(opts.object_size) for _, opts in built}) == 2


@pytest.mark.parametrize("args,message", [
    (["--over", "iodepth=a"], "--over: iodepth=a: must be a whole number"),
    (["--over", "iodepth=1,4", "--over", "jobs=1,x"], "--over: jobs=x: must be a whole number"),
    (["--over", "iodepth"], "write PARAMETER=VALUE,VALUE"),
    (["--over", "iodepth=1,4", "--over", "iodepth=8"], "--over iodepth is given twice"),
    (["--over", "iodepth=1,,4"], "iodepth has an empty value"),
    (["--over", "iodeph=1,4"], "did you mean 'iodepth'?"),
    (["--over", "concurrency=1,4"], "no option 'concurrency' to sweep; it is an option of s3"),
    (["--over", "iodepth=1,4", "--iodepth", "2"], "--iodepth and --over iodepth=... both set iodepth"),
    (["--over", "block-size=256KiB,big"], "--over: block_size=big:"),
    (["--over", "jobs=1,16", "--size", "8MiB", "--block-size", "1MiB"], "jobs=16: size 8 MiB is too small"),
    (["--over", "operations=active-full,restore-random"], "every point must run the same phases"),
    (["--workload", "s3", "--endpoint", "http://127.0.0.1:9", "--bucket", "backups", "--over", "streams=1,4"],
     "the s3 workload has no option 'streams' to sweep; its parallelism: concurrency"),
    (["--workload", "s3", "--endpoint", "http://127.0.0.1:9", "--bucket", "backups", "--over", "object-size=1MiB,zz"],
     "object_size=zz: not a size"),
])
def test_the_command_refuses_a_grid_before_any_point_runs(tmp_path, args, message):
    target, results = tmp_path / "target", tmp_path / "results"
    target.mkdir()
    path = [] if "s3" in args else [str(target)]
    done = CliRunner().invoke(sweep_cmd.sweep_command, [*path, "--results", str(results), *args])
    assert isinstance(done.exception, InputError), done.output
    assert message in done.exception.message
    assert not results.exists() and not list(target.iterdir()), "a refused sweep ran something"


def test_a_refusal_of_another_option_is_not_blamed_on_a_swept_value():
    with pytest.raises(InputError) as refused:
        _planned(["--workload", "s3", "--endpoint", "http://127.0.0.1:9", "--bucket", "b", "--over",
                  "concurrency=1,4"])
    assert "--bucket" in refused.value.message and "concurrency=1" not in refused.value.message


# ---- the recipe key ----------------------------------------------------------------------------

def _recipe(entry: dict) -> dict:
    return {"name": "t", "devices": ["/dev/vda", "/dev/vdb"],
            "layout": [{"name": "l1", "kind": "lvm-striped", "devices": ["/dev/vda", "/dev/vdb"]}],
            "workload": [{"kind": "kb2014", "size": "64MiB", **entry}]}


def test_a_recipe_sweep_is_each_point_as_an_entry_of_its_own():
    recipe = model.parse(_recipe({"operations": ["restore-random"],
                                  "sweep": {"iodepth": [1, 4], "jobs": [1, 2], "block_size": ["256KiB", "1MiB"]}}))
    entry = recipe.workload[0]
    entries = sweep.point_entries(entry)
    assert len(entries) == 8
    point, last = entries[-1]
    assert point.text == "iodepth=4 jobs=2 block_size=1MiB"
    assert (last.iodepth, last.jobs, last.block_size, last.sweep) == (4, 2, MiB, None)
    assert last.size == 64 * MiB and last.operations == ("restore-random",)
    assert sweep.point_entries(model.parse(_recipe({})).workload[0]) == [(None, model.parse(_recipe({})).workload[0])]


def test_an_s3_recipe_sweeps_concurrency_and_object_size():
    data = _recipe({})
    data["layout"][0]["minio"] = True
    data["workload"] = [{"kind": "s3", "bucket": "backups", "sweep": {"concurrency": [1, 8],
                                                                      "object_size": ["1MiB", "16MiB"]}}]
    entry = model.parse(data).workload[0]
    assert [(p.text, e.concurrency) for p, e in sweep.point_entries(entry)][::3] == [
        ("concurrency=1 object_size=1MiB", 1), ("concurrency=8 object_size=16MiB", 8)]


@pytest.mark.parametrize("grid,expected", [
    ({"iodepth": [1, "a"]}, "workload[0].sweep.iodepth: iodepth=a: must be a whole number"),
    ({"iodeph": [1, 2]}, "workload[0].sweep.iodeph: the kb2014 workload has no option 'iodeph' to sweep; "
                         "did you mean 'iodepth'?"),
    ({"concurrency": [1, 2]}, "workload[0].sweep.concurrency: the kb2014 workload has no option 'concurrency' to "
                              "sweep; it is an option of s3 workloads"),
    ({"jobs": [0, 2]}, "workload[0].sweep.jobs: jobs=0:"),
    ({"iodepth": [1, 1]}, "workload[0].sweep.iodepth: iodepth lists 1 twice"),
    ({"iodepth": []}, "workload[0].sweep.iodepth: iodepth has no values"),
    ({"operations": ["active-full", "restore-random"]}, "workload[0].sweep: every point must run the same phases"),
])
def test_a_recipe_sweep_is_refused_at_its_key_path(grid, expected):
    with pytest.raises(RecipeError) as refused:
        model.parse(_recipe({"sweep": grid}))
    assert expected in refused.value.message


def test_a_hosts_recipe_does_not_sweep():
    data = model.load(Path(__file__).parents[2] / "examples" / "hosts-kb2014.toml").model_dump(
        mode="json", exclude_unset=True)
    model.parse(data)
    data["workload"][0]["sweep"] = {"iodepth": [1, 4]}
    with pytest.raises(RecipeError, match=r"workload\[0\]\.sweep: \[hosts\] recipes do not sweep"):
        model.parse(data)


def test_a_recipe_runs_sweep_is_read_back_from_its_operations_names():
    recipe = model.parse(_recipe({"operations": ["restore-random"], "sweep": {"iodepth": [1, 4], "jobs": [1, 2]}}))
    speeds = {"iodepth=1,jobs=1": [100, 101, 99], "iodepth=1,jobs=2": [150, 151, 149],
              "iodepth=4,jobs=1": [200, 202, 198], "iodepth=4,jobs=2": [201, 190, 212]}
    ops = [_op(f"{naming.workload_group('l1', 0, 'kb2014', 1, key)}/restore-random", mib_s)
           for key, mib_s in speeds.items()]
    run = RunRecord("r1", "recipe", "l1", {"recipe": recipe.model_dump(mode="json")}, status=COMPLETE, operations=ops)
    (data,) = analysis.from_recipe_run(run)
    assert data.grid == {"iodepth": ["1", "4"], "jobs": ["1", "2"]} and data.parallel == ("iodepth", "jobs")
    assert data.repeat == 1 and not data.missing
    (found,) = analysis.analyse(data)
    assert found.phase == "restore-random" and found.best.point.text == "iodepth=4 jobs=2"
    assert [p.text for p in found.within_noise] == ["iodepth=4 jobs=1"]


# ---- what the grid says --------------------------------------------------------------------------

GRID = {"iodepth": ["1", "4", "16"], "jobs": ["1"]}


def _one_line(samples: dict[int, list[float]]) -> dict[str, list[float]]:
    return {f"iodepth={depth} jobs=1": values for depth, values in samples.items()}


def test_from_runs_rebuilds_the_grid_and_each_points_run():
    runs = _runs({"iodepth": ["1", "4"], "jobs": ["1", "2"]},
                 {"iodepth=1 jobs=1": [100.0], "iodepth=1 jobs=2": [150.0], "iodepth=4 jobs=2": [180.0]})
    data = analysis.from_runs(runs)
    assert data.sweep_id == "sweep-1a2b3c4d" and data.workload == "kb2014"
    assert data.grid == {"iodepth": ["1", "4"], "jobs": ["1", "2"]} and data.parallel == ("iodepth", "jobs")
    assert [(p.point.text, p.source) for p in data.points] == [
        ("iodepth=1 jobs=1", "run-1"), ("iodepth=1 jobs=2", "run-2"), ("iodepth=4 jobs=1", ""),
        ("iodepth=4 jobs=2", "run-4")]
    assert [p.text for p in data.missing] == ["iodepth=4 jobs=1"]
    assert missing_line(data) == "1 of 4 points not measured: iodepth=4 jobs=1"
    assert runs[1].label == "sweep-1a2b3c4d iodepth=1 jobs=2"


def test_the_best_point_is_the_highest_median_and_beats_the_next_beyond_noise():
    found = _phase(GRID, _one_line(STEADY))
    assert found.best.point.text == "iodepth=16 jobs=1"
    assert found.best.speed.median == 300 * MiB and found.best.p99 == ("read_p99_lat", 2e6)
    assert found.best_verdict.outcome == "better" and found.within_noise == []
    assert found.best_text == "best: iodepth=16 jobs=1, 300.0 MiB/s (1.50x faster than iodepth=4 jobs=1, the next best)"


def test_a_best_point_no_measurement_supports_names_the_points_it_does_not_beat():
    found = _phase(GRID, _one_line({1: STEADY[1], 4: STEADY[4], 16: NOISY_SAME}))
    assert found.best.point.text == "iodepth=16 jobs=1"
    assert found.best_verdict.outcome == "same"
    assert [p.text for p in found.within_noise] == ["iodepth=4 jobs=1"]
    assert found.best_text.endswith("; no better beyond noise than iodepth=4 jobs=1")


def test_every_step_that_pays_beyond_noise_is_walked_to_the_end():
    (axis,) = _phase(GRID, _one_line(STEADY)).axes
    assert [(s.low, s.high, s.verdict.outcome) for s in axis.steps] == [("1", "4", "better"), ("4", "16", "better")]
    assert axis.stop is None
    assert axis.text == "adding iodepth paid at every step up to iodepth=16, the most swept (jobs=1)"


def test_adding_parallelism_stops_paying_at_the_first_step_within_the_noise():
    (axis,) = _phase(GRID, _one_line({1: STEADY[1], 4: STEADY[4], 16: NOISY_SAME})).axes
    assert axis.stop is not None and (axis.stop.low, axis.stop.high) == ("4", "16")
    assert axis.stop.verdict.outcome == "same" and axis.stop.verdict.margin is not None
    assert axis.text.startswith("adding iodepth stops paying at iodepth 4->16 (jobs=1): no difference beyond noise (±")


def test_the_first_step_that_does_not_pay_stops_the_walk_even_if_a_later_one_would():
    # 1 -> 4 within noise, 4 -> 16 clearly faster: the walk still stops at the first.
    (axis,) = _phase(GRID, _one_line({1: [100.0, 110.0, 90.0], 4: [105.0, 95.0, 115.0], 16: STEADY[16]})).axes
    assert (axis.stop.low, axis.stop.high) == ("1", "4") and len(axis.steps) == 1


def test_a_slower_step_stops_paying_too():
    (axis,) = _phase(GRID, _one_line({1: STEADY[1], 4: STEADY[4], 16: [150.0, 151.0, 149.0]})).axes
    assert (axis.stop.high, axis.stop.verdict.outcome) == ("16", "worse")
    assert "stops paying at iodepth 4->16" in axis.text and "slower" in axis.text


def test_the_axis_runs_in_numeric_order_whatever_order_the_values_were_given():
    grid = {"iodepth": ["16", "1", "4"], "jobs": ["1"]}
    (axis,) = _phase(grid, _one_line(STEADY)).axes
    assert [(s.low, s.high) for s in axis.steps] == [("1", "4"), ("4", "16")]
    assert analysis.axis_order(["16", "1", "4"]) == ["1", "4", "16"]
    assert analysis.axis_order(["1MiB", "256KiB"]) == ["1MiB", "256KiB"]   # not numbers: as given


@pytest.mark.parametrize("speeds", [
    {1: [100.0], 4: [200.0], 16: [300.0]},       # one sample each
    {1: [100.0], 4: [100.0], 16: [300.0]},       # a tie, on one sample: still no judgement
    {1: [100.0], 4: [200.0, 202.0, 198.0], 16: [300.0]},   # one side measured once
])
def test_one_sample_points_say_the_noise_is_unknown_rather_than_where_it_stops(speeds):
    found = _phase(GRID, _one_line(speeds))
    (axis,) = found.axes
    assert axis.stop is not None and axis.stop.verdict.outcome == "unknown"
    assert axis.text.startswith("cannot tell where adding iodepth stops paying (jobs=1): iodepth 1->4 is ")
    assert "noise unknown" in axis.text and "--repeat 3" in axis.text
    assert "stops paying at" not in axis.text


def test_a_best_point_measured_once_says_the_noise_is_unknown():
    found = _phase(GRID, _one_line({1: [100.0], 4: [300.0], 16: [300.0]}))
    assert found.best_verdict.outcome == "unknown"
    assert "noise unknown" in found.best_text and "no better beyond noise" not in found.best_text


def test_a_point_not_measured_ends_the_walk_and_is_named():
    runs = _runs(GRID, _one_line({1: STEADY[1], 16: STEADY[16]}))
    (found,) = analysis.analyse(analysis.from_runs(runs))
    (axis,) = found.axes
    assert axis.steps == [] and axis.stop is None and axis.gap == "4"
    assert axis.text == "adding iodepth cannot be judged (jobs=1); iodepth=4 was not measured"
    assert [c.status for c in found.cells] == [COMPLETE, "not run", COMPLETE]


def test_each_line_of_the_other_parameters_gets_its_own_verdict():
    grid = {"iodepth": ["1", "4"], "jobs": ["1", "2"]}
    found = _phase(grid, {"iodepth=1 jobs=1": STEADY[1], "iodepth=1 jobs=2": STEADY[4],
                          "iodepth=4 jobs=1": STEADY[4], "iodepth=4 jobs=2": NOISY_SAME})
    texts = {(axis.axis, axis.where): axis.text for axis in found.axes}
    assert set(texts) == {("iodepth", "jobs=1"), ("iodepth", "jobs=2"), ("jobs", "iodepth=1"), ("jobs", "iodepth=4")}
    assert "paid at every step" in texts[("iodepth", "jobs=1")]
    assert "stops paying at iodepth 1->4" in texts[("iodepth", "jobs=2")]
    assert "stops paying at jobs 1->2" in texts[("jobs", "iodepth=4")]


def test_a_parameter_that_adds_no_parallelism_has_no_stop_verdict():
    grid = {"block_size": ["256KiB", "1MiB"], "iodepth": ["1"]}
    data = analysis.from_runs(_runs(grid, {"block_size=256KiB iodepth=1": STEADY[1],
                                           "block_size=1MiB iodepth=1": STEADY[4]}))
    (found,) = analysis.analyse(data)
    assert found.axes == [] and found.best.point.text == "block_size=1MiB iodepth=1"
    assert data.x_axis == "block_size"


def test_a_failed_points_run_is_shown_as_not_measured():
    runs = _runs(GRID, _one_line(STEADY))
    runs[1].status = FAILED
    runs[1].operations[0].status = FAILED
    data = analysis.from_runs(runs)
    (found,) = analysis.analyse(data)
    assert [p.text for p in data.missing] == ["iodepth=4 jobs=1"]
    assert found.cells[1].speed is None and found.cells[1].status == FAILED


def test_the_tables_hold_the_grid_and_its_verdicts():
    data = analysis.from_runs(_runs(GRID, _one_line({1: STEADY[1], 4: STEADY[4], 16: NOISY_SAME})))
    assert grid_title(data) == "sweep-1a2b3c4d: kb2014 over iodepth 1, 4, 16 x jobs 1 (3 points, 3 samples each)"
    (table,) = grid_tables(data)
    assert table.headings == ["iodepth", "jobs", "MiB/s", "interval, CV", "p99 latency", "stored as"]
    assert [row[:3] for row in table.rows] == [["1", "1", "100.0"], ["4", "1", "200.0"], ["16", "1", "205.0"]]
    assert getattr(table.rows[2][2], "style", "") == "bold"   # the best point
    assert table.rows[0][4] == "2.00 ms" and table.rows[0][5] == "run-1"
    assert table.lines[0].startswith("best: iodepth=16 jobs=1") and "stops paying at iodepth 4->16" in table.lines[1]


# ---- the --json document -------------------------------------------------------------------------

@pytest.mark.parametrize("speeds", [
    {1: STEADY[1], 4: STEADY[4], 16: NOISY_SAME},
    {1: [100.0], 4: [200.0], 16: [200.0]},
    {1: STEADY[1], 16: STEADY[16]},
])
def test_the_document_validates_against_the_shipped_schema(speeds):
    data = analysis.from_runs(_runs(GRID, _one_line(speeds)))
    doc = document.envelope("sweep", analysis.document(data))
    checked(doc)   # the model the command checks before printing
    errors = sorted(Draft202012Validator(document.schema("sweep")).iter_errors(doc), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]
    assert doc["kind"] == "backupbench.sweep" and doc["sweep"]["id"] == "sweep-1a2b3c4d"
    assert doc["sweep"]["x_axis"] == "iodepth" and len(doc["points"]) == 3
    (phase,) = doc["phases"]
    assert phase["unit"] == "B/s" and phase["figure"] == "effective_bw" and phase["best"] is not None


def test_the_document_says_where_it_stops_and_which_points_never_ran():
    data = analysis.from_runs(_runs(GRID, _one_line({1: STEADY[1], 4: STEADY[4], 16: NOISY_SAME})))
    doc = analysis.document(data)
    (phase,) = doc["phases"]
    (axis,) = phase["axes"]
    assert axis["stops_at"]["low"] == "4" and axis["stops_at"]["outcome"] == "same" and axis["fixed"] == {"jobs": "1"}
    assert [cell["samples"] for cell in phase["cells"]] == [3, 3, 3]
    assert phase["cells"][0]["low"] < phase["cells"][0]["median"] == 100 * MiB < phase["cells"][0]["high"]
    gap = analysis.document(analysis.from_runs(_runs(GRID, _one_line({1: STEADY[1], 16: STEADY[16]}))))
    assert [p["status"] for p in gap["points"]] == [COMPLETE, "not run", COMPLETE]
    assert gap["points"][1]["stored_as"] is None and gap["phases"][0]["cells"][1]["median"] is None
