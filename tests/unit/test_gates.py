"""--expect: parsing PHASE[.FIGURE]OP VALUE[UNIT], evaluating it against a run's stored figures,
and the errors a typo gets (one line, the closest names)."""

from __future__ import annotations

import pytest

from backupbench import plan as plan_mod
from backupbench.analysis import gates
from backupbench.errors import ExpectationMissed, InputError
from backupbench.layouts.capabilities import HostCapabilities
from backupbench.recipe import model as recipe_model
from backupbench.results.model import COMPLETE, FAILED, INTERRUPTED, VOID, OperationRecord, RunRecord

MiB = 2**20


def fio_run(run_id: str = "20261124T000000-aaaa") -> RunRecord:
    run = RunRecord(run_id, "kb2014", "/srv/backups", {"jobs": 1}, status=COMPLETE)
    run.operations = [
        OperationRecord("active-full", "write qd1", COMPLETE, figures={
            "effective_bw": 500 * MiB, "write_bw": 500 * MiB, "write_iops": 1000.0, "write_p99_lat": 40e6,
            "members_util": 55.0, "runtime": 10.0}),
        OperationRecord("synthetic-full", "randrw w50% qd4", COMPLETE, figures={
            "effective_bw": 300 * MiB, "read_bw": 300 * MiB, "write_bw": 300 * MiB, "read_iops": 600.0,
            "write_iops": 600.0, "read_p99_lat": 5e6, "write_p99_lat": 9e6}),
        OperationRecord("restore-random", "randread qd1", COMPLETE, figures={
            "effective_bw": 205 * MiB, "read_bw": 205 * MiB, "read_iops": 410.0, "read_p99_lat": 3e6}),
    ]
    return run


def check(text: str, run: RunRecord | None = None) -> list[gates.GateResult]:
    return gates.evaluate([gates.parse(text)], run or fio_run())


@pytest.mark.parametrize("text, kind, value", [
    ("restore-random>=300MiB/s", "rate", 300 * MiB),
    ("restore-random >= 300 MiB/s", "rate", 300 * MiB),
    ("restore-random>0.5GiB/s", "rate", 512 * MiB),      # a fraction: no whole number of bytes needed
    ("restore-random>=300MB/s", "rate", 300_000_000),      # MB is decimal, as everywhere in backupbench
    ("active-full.p99<=50ms", "time", 0.05),
    ("active-full.p99<500us", "time", 0.0005),
    ("active-full.runtime<=2m", "time", 120.0),
    ("active-full.util<=80%", "percent", 80.0),
    ("restore-random.iops>=400IO/s", "IO/s", 400.0),
    ("create>=1000files/s", "files/s", 1000.0),
    ("verify.mismatches<=0", "number", 0.0),
])
def test_expectations_parse_with_units_from_the_units_module(text, kind, value):
    expectation = gates.parse(text)
    assert expectation.quantity.kind == kind
    assert expectation.quantity.value == pytest.approx(value)
    assert expectation.text == text.strip()


def test_phase_figure_and_operator_are_read_apart():
    expectation = gates.parse("raid6/restore-random.mon.cpu_iowait.avg<5%")
    assert (expectation.phase, expectation.figure, expectation.op) == ("raid6/restore-random", "mon.cpu_iowait.avg", "<")
    assert gates.parse("restore-random>=300MiB/s").figure is None


def test_a_met_and_a_missed_expectation():
    met, = check("active-full>=400MiB/s")
    assert met.met and met.figure == "effective_bw" and met.measured_text == "500.0 MiB/s"
    missed, = check("restore-random>=300MiB/s")
    assert not missed.met and missed.measured_text == "205.0 MiB/s"
    with pytest.raises(ExpectationMissed) as raised:
        gates.raise_if_missed([met, missed])
    assert raised.value.exit_code == 5
    assert raised.value.message == "1 of 2 expectation checks missed: restore-random>=300MiB/s: 205.0 MiB/s"
    gates.raise_if_missed([met])  # nothing missed: no error


@pytest.mark.parametrize("text, met", [
    ("restore-random>=205MiB/s", True), ("restore-random>205MiB/s", False),
    ("restore-random<=205MiB/s", True), ("restore-random<205MiB/s", False),
])
def test_operators_at_the_boundary(text, met):
    assert [result.met for result in check(text)] == [met]


def test_p99_is_the_phases_own_latency_and_says_which():
    write, = check("active-full.p99<=50ms")
    assert write.met and write.figure == "write_p99_lat" and write.measured_text == "40.00 ms (write p99)"
    read, = check("restore-random.p99<=2ms")
    assert not read.met and read.figure == "read_p99_lat" and read.measured_text == "3.00 ms (read p99)"
    # A phase that reads and writes: the worse of the two holds the job up.
    mixed, = check("synthetic-full.p99<=8ms")
    assert not mixed.met and mixed.figure == "write_p99_lat"


def test_aliases_and_stored_names():
    iops, = check("synthetic-full.iops>=1200")
    assert iops.met and iops.measured == 1200.0
    util, = check("active-full.util<50%")
    assert not util.met and util.measured_text == "55.0%"
    assert check("active-full.write_bw>=500MiB/s")[0].met


@pytest.mark.parametrize("text, message", [
    ("restore-random>=300furlongs", "unknown unit 'furlongs'"),
    ("restore-random=>300MiB/s", "is not PHASE[.FIGURE]OP VALUE[UNIT]"),
    ("restore-random>=fast", "is not PHASE[.FIGURE]OP VALUE[UNIT]"),
])
def test_bad_syntax_or_unit_is_one_line(text, message):
    with pytest.raises(InputError) as raised:
        gates.parse(text)
    assert message in raised.value.message and "\n" not in raised.value.one_line()


def test_unknown_phase_names_the_closest():
    with pytest.raises(InputError) as raised:
        check("restor-random>=300MiB/s")
    message = raised.value.message
    assert "has no phase 'restor-random' (did you mean restore-random?)" in message
    assert "its phases: active-full, synthetic-full, restore-random" in message


def test_unknown_figure_names_the_closest():
    with pytest.raises(InputError) as raised:
        check("active-full.p98<=50ms")
    assert "active-full has no figure 'p98' (did you mean p99?)" in raised.value.message
    with pytest.raises(InputError) as raised:
        check("active-full.read_p99_lat<=50ms")  # a write phase has no read latency
    assert "did you mean write_p99_lat" in raised.value.message


WRONG_KIND = [
    ("active-full.p99<=50MiB/s", "p99 is a time (ns), the value given is a rate"),
    ("active-full.util<=80", "util (members_util) is a percent (%), the value given is a number"),
    ("active-full.write_p99_lat<=1GiB", "write_p99_lat is a time (ns), the value given is a size"),
    ("active-full>=300", "give a unit or name the figure"),
    ("active-full<=50ms", "name the figure for a time"),
]


@pytest.mark.parametrize("text, message", WRONG_KIND)
def test_a_value_of_the_wrong_kind_is_refused(text, message):
    with pytest.raises(InputError) as raised:
        check(text)
    assert message in raised.value.message


@pytest.mark.parametrize("text, message", WRONG_KIND)
def test_a_value_of_the_wrong_kind_is_refused_before_the_run(text, message):
    with pytest.raises(InputError) as raised:
        gates.check_before_run(gates.parse_all([text]), ("active-full", "restore-random"), "--workload kb2014")
    assert message in raised.value.message


def test_a_figure_known_only_once_measured_waits_for_the_run():
    # The monitor's figures and their units come with the run: nothing to refuse before it.
    gates.check_before_run(gates.parse_all(["active-full.mon.cpu_iowait.avg<5%", "active-full.members_util<90%",
                                            "restore-random.iops>=100", "verify.mismatches<=0"]),
                           ("active-full", "restore-random", "verify"), "--workload kb2014")


def test_a_kind_known_only_from_the_run_is_still_checked_against_it():
    run = fio_run()
    run.operations[0].figures["mon.cpu_iowait.avg"] = 3.0
    run.operations[0].units["mon.cpu_iowait.avg"] = "%"
    assert check("active-full.mon.cpu_iowait.avg<5%", run)[0].met
    with pytest.raises(InputError, match="mon.cpu_iowait.avg of active-full is a percent"):
        check("active-full.mon.cpu_iowait.avg<5ms", run)


def test_a_failed_phase_misses_and_says_why():
    run = fio_run()
    run.operations[2].status, run.operations[2].figures = FAILED, {}
    result, = check("restore-random>=1MiB/s", run)
    assert not result.met and result.measured is None and result.measured_text == "no figures: the phase failed"


def test_a_phase_name_checks_every_layout_of_a_recipe_run():
    run = RunRecord("r", "recipe", "layouts", {}, status=COMPLETE)
    run.operations = [
        OperationRecord(f"{layout}/restore-random", "randread qd1", COMPLETE, figures={"effective_bw": mib * MiB},
                        detail={"layout": layout})
        for layout, mib in (("linear", 205), ("striped", 412))]
    results = check("restore-random>=300MiB/s", run)
    assert [(r.operation, r.met) for r in results] == [("linear/restore-random", False), ("striped/restore-random", True)]
    only, = check("striped/restore-random>=300MiB/s", run)
    assert only.met


def test_phases_are_checked_before_a_run_measures():
    expectations = gates.parse_all(["restore-random>=1MiB/s"])
    gates.check_phases(expectations, ("layout", "active-full", "restore-random"), "--workload kb2014")
    with pytest.raises(InputError, match="--workload smallfiles has no phase 'restore-random'"):
        gates.check_phases(expectations, ("create", "update-1"), "--workload smallfiles")


def test_expectations_dict_is_the_json_key():
    assert gates.expectations_dict([]) == {}
    found = gates.expectations_dict(check("restore-random>=300MiB/s"))
    assert found == {"expectations": [{"expectation": "restore-random>=300MiB/s", "operation": "restore-random",
                                       "figure": "effective_bw", "operator": ">=", "threshold": 300 * MiB,
                                       "measured": 205 * MiB, "unit": "B/s", "measured_text": "205.0 MiB/s",
                                       "met": False}]}
    latency, = gates.expectations_dict(check("active-full.p99<=50ms"))["expectations"]
    assert (latency["figure"], latency["measured"], latency["threshold"], latency["unit"]) == \
        ("write_p99_lat", 40e6, 50e6, "ns")
    count, = gates.expectations_dict(check("synthetic-full.iops>=1300"))["expectations"]
    assert (count["measured"], count["threshold"], count["unit"], count["met"]) == (1200.0, 1300.0, "IO/s", False)


def monitored_run() -> RunRecord:
    run = fio_run()
    run.operations[0].figures.update({"mon.vda.w_await.p95": 12.0, "mon.vdb.w_await.p95": 31.0})
    run.operations[0].units.update({"mon.vda.w_await.p95": "ms", "mon.vdb.w_await.p95": "ms"})
    return run


def test_a_figure_per_device_is_named_with_its_device_in_brackets():
    expectation = gates.parse("active-full.mon.w_await.p95[vda]<=20ms")
    assert (expectation.phase, expectation.figure, expectation.device) == ("active-full", "mon.w_await.p95", "vda")
    vda, = check("active-full.mon.w_await.p95[vda]<=20ms", monitored_run())
    vdb, = check("active-full.mon.w_await.p95[vdb]<=20ms", monitored_run())
    assert (vda.met, vda.measured_text, vdb.met, vdb.measured_text) == (True, "12.00 ms", False, "31.00 ms")
    # As stored, the name still works; either way the JSON splits the device out, as the document does.
    stored, = check("active-full.mon.vdb.w_await.p95<=20ms", monitored_run())
    assert stored.figure == vdb.figure == "mon.vdb.w_await.p95"
    entry, = gates.expectations_dict([vdb])["expectations"]
    assert {k: entry[k] for k in ("figure", "device", "measured", "threshold", "unit")} == \
        {"figure": "mon.w_await.p95", "device": "vdb", "measured": 31.0, "threshold": 20.0, "unit": "ms"}
    assert "device" not in gates.expectations_dict(check("active-full>=1MiB/s"))["expectations"][0]


def test_the_expectations_table_echoes_a_device_as_written(capsys):
    """Issue 42: rich read `[vdb]` as a style and printed the expectation without its device."""
    from backupbench.cli.common import Gate

    Gate(check("active-full.mon.w_await.p95[vdb]<=20ms", monitored_run())).print_table()
    assert "active-full.mon.w_await.p95[vdb]<=20ms" in capsys.readouterr().out


def test_a_device_on_a_figure_not_measured_per_device_is_refused():
    with pytest.raises(InputError, match="p99 is not measured per device"):
        gates.check_before_run(gates.parse_all(["active-full.p99[vda]<=20ms"]), ("active-full",), "--workload kb2014")
    with pytest.raises(InputError, match="has no figure"):
        check("active-full.mon.w_await.p95[vdz]<=20ms", monitored_run())


THIN_POOL_FULL = ("thin pool pool0 ran out of data space on thin: writes waited or failed, so the figures of "
                  "this run are void; give the pool more space (pool_size) or write less")


def test_a_void_run_misses_every_expectation_and_says_why():
    run = fio_run()
    run.status, run.notes = VOID, ["thin: monitor sampled 10 times", THIN_POOL_FULL]
    results = check("active-full>=400MiB/s", run) + check("restore-random.p99<=50ms", run)
    assert [result.met for result in results] == [False, False]
    assert results[0].measured_text == f"run is void: {THIN_POOL_FULL} (measured 500.0 MiB/s)"
    assert results[0].measured == 500 * MiB  # the figure is still shown, never counted as met
    with pytest.raises(ExpectationMissed, match="2 of 2 expectation checks missed: active-full>=400MiB/s: run is void"):
        gates.raise_if_missed(results)
    # Its phases all ran: a phase it does not have is still a typo (exit 2), not a miss.
    with pytest.raises(InputError, match="has no phase 'restor-random'"):
        check("restor-random>=1MiB/s", run)


def test_an_interrupted_or_failed_run_misses_even_the_phases_it_did_not_reach():
    run = fio_run()
    run.status, run.error = INTERRUPTED, "interrupted"
    run.operations = run.operations[:1]
    reached, = check("active-full>=400MiB/s", run)
    never, = check("restore-random>=1MiB/s", run)
    assert (reached.met, reached.measured_text) == (False, "run was interrupted (measured 500.0 MiB/s)")
    assert (never.met, never.measured, never.measured_text, never.unit, never.threshold) == \
        (False, None, "run was interrupted", "B/s", 1 * MiB)
    run.status, run.error = FAILED, "fio exited with status 1"
    assert check("active-full>=400MiB/s", run)[0].measured_text.startswith("run failed: fio exited with status 1")


def test_a_repeated_state_of_a_plan_matches_each_repeat():
    planned = ("raid6/rebuilding/restore-random", "raid6/rebuilding-[0-9]*/restore-random")
    for text in ("rebuilding-3/restore-random>=1MiB/s", "raid6/rebuilding-12/restore-random>=1MiB/s",
                 "restore-random>=1MiB/s", "rebuilding/restore-random>=1MiB/s"):
        gates.check_before_run(gates.parse_all([text]), planned, "recipe 'r'")
    with pytest.raises(InputError, match="has no phase 'rebuilding-x/restore-random'"):
        gates.check_before_run(gates.parse_all(["rebuilding-x/restore-random>=1MiB/s"]), planned, "recipe 'r'")


FAULT_RECIPE = """
name = "r"
devices = ["/dev/vda", "/dev/vdb", "/dev/vdc", "/dev/vdd", "/dev/vde"]

[[layout]]
name = "raid6"
kind = "mdraid"
level = 6
devices = ["/dev/vda", "/dev/vdb", "/dev/vdc", "/dev/vdd"]
filesystem = { type = "xfs" }
fault = { fail = "/dev/vdc", replace = "/dev/vde", rebuild_load = "repeat" }

[[layout]]
name = "plain"
kind = "mdraid"
level = 1
devices = ["/dev/vda", "/dev/vdb"]
filesystem = { type = "xfs" }

[[workload]]
kind = "kb2014"
operations = ["active-full", "restore-random"]

[[workload]]
kind = "smallfiles"
files = 10
"""


def test_the_operations_apply_will_store_are_known_from_the_plan(tmp_path):
    recipe_file = tmp_path / "r.toml"
    recipe_file.write_text(FAULT_RECIPE)
    nothing_asked = HostCapabilities(frozenset(), frozenset())  # planning only: the host is never asked
    plan = plan_mod.build(recipe_model.load(recipe_file), "20261124T000000-aaaa", nothing_asked, lambda device: [])
    names = plan.operations()
    assert {"raid6/1-kb2014/healthy/active-full", "raid6/1-kb2014/rebuilding-[0-9]*/restore-random",
            "raid6/2-smallfiles/rebuilt/create", "raid6/member", "raid6/rebuild", "plain/1-kb2014/restore-random",
            "plain/2-smallfiles/create"} <= set(names)
    assert not any(name.startswith("plain/") and ("/degraded/" in name or name == "plain/rebuild") for name in names)
    expectations = gates.parse_all(["degraded/restore-random>=1MiB/s", "plain/2-smallfiles/create>=1files/s"])
    gates.check_before_run(expectations, names, "recipe 'r'")
    with pytest.raises(InputError, match="recipe 'r' has no phase 'nosuchphase'"):
        gates.check_before_run(gates.parse_all(["nosuchphase>=1MiB/s"]), names, "recipe 'r'")


def test_a_hosts_recipes_operations_are_its_workloads_phases(tmp_path):
    nothing_asked = HostCapabilities(frozenset(), frozenset())
    hosts = '[hosts]\nnames = ["10.0.0.5"]\npath = "/srv/backup"\n'
    kb2014 = '[[workload]]\nkind = "kb2014"\noperations = ["active-full", "restore-random"]\n'
    first_write = '[[workload]]\nkind = "first-write"\n'
    named = {}
    for count, workloads in (("one", kb2014), ("two", kb2014 + first_write)):
        recipe_file = tmp_path / f"{count}.toml"
        recipe_file.write_text(f'name = "{count}"\n{hosts}\n{workloads}')
        plan = plan_mod.build(recipe_model.load(recipe_file), "20261124T000000-aaaa", nothing_asked, lambda d: [])
        named[count] = plan.operations()
    assert {"active-full", "restore-random"} <= set(named["one"])
    assert {"1-kb2014/restore-random", "2-first-write/overwrite"} <= set(named["two"])
    gates.check_before_run(gates.parse_all(["overwrite>=1MiB/s"]), named["two"], "recipe 'two'")
    with pytest.raises(InputError, match="recipe 'one' has no phase 'overwrite'"):
        gates.check_before_run(gates.parse_all(["overwrite>=1MiB/s"]), named["one"], "recipe 'one'")
