"""--expect: parsing PHASE[.FIGURE]OP VALUE[UNIT], evaluating it against a run's stored figures,
and the errors a typo gets (one line, the closest names)."""

from __future__ import annotations

import pytest

from backupbench.analysis import gates
from backupbench.errors import ExpectationMissed, InputError
from backupbench.results.model import COMPLETE, FAILED, OperationRecord, RunRecord

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


@pytest.mark.parametrize("text, message", [
    ("active-full.p99<=50MiB/s", "write_p99_lat of active-full is a time (ns), the value given is a rate"),
    ("active-full.util<=80", "members_util of active-full is a percent (%), the value given is a number"),
    ("active-full>=300", "give a unit or name the figure"),
    ("active-full<=50ms", "name the figure for a time"),
])
def test_a_value_of_the_wrong_kind_is_refused(text, message):
    with pytest.raises(InputError) as raised:
        check(text)
    assert message in raised.value.message


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
                                       "figure": "effective_bw", "measured": 205 * MiB,
                                       "measured_text": "205.0 MiB/s", "met": False}]}
