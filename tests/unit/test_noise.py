"""analysis/noise.py: verdicts that know noise, the slow-host rule for 2..N hosts, gates on an
interval; known samples with the arithmetic written out, and properties (A/A, symmetry)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, strategies as st

from backupbench.analysis.noise import judge_bound, judge_hosts, ratio_interval, split_bound, verdict
from backupbench.errors import InputError
from backupbench.stats import spread

# [100, 102, 98]: mean 100, s = 2, half width 4.302653 * 2 / sqrt(3) = 4.968275 -> [95.03, 104.97]
# [50, 51, 49]:   mean 50,  s = 1, half width 4.302653 * 1 / sqrt(3) = 2.484138 -> [47.52, 52.48]
FAST, SLOW = [100, 102, 98], [50, 51, 49]


def test_two_times_faster_beyond_noise():
    found = verdict(FAST, SLOW)
    assert (found.outcome, found.text) == ("better", "2.00x faster")
    # margin = (4.968275 + 2.484138) / 50 = 0.149048
    assert found.factor == pytest.approx(2.0) and found.margin == pytest.approx(0.149048, abs=1e-6)
    assert verdict(SLOW, FAST).text == "2.00x slower" and verdict(SLOW, FAST).outcome == "worse"


def test_ratio_interval_is_what_the_two_intervals_allow():
    # FAST [95.031725, 104.968275] over SLOW [47.515862, 52.484138]:
    # 95.031725 / 52.484138 = 1.810675, 104.968275 / 47.515862 = 2.209121; the true 2.0 inside.
    low, high = ratio_interval(FAST, SLOW)
    assert low == pytest.approx(1.810675, abs=1e-6) and high == pytest.approx(2.209121, abs=1e-6)
    # The other way round: 47.515862 / 104.968275 = 0.452669, 52.484138 / 95.031725 = 0.552280.
    low, high = ratio_interval(SLOW, FAST)
    assert low == pytest.approx(0.452669, abs=1e-6) and high == pytest.approx(0.552280, abs=1e-6)


def test_ratio_interval_needs_an_interval_on_each_side():
    assert ratio_interval([100], SLOW) is None and ratio_interval(FAST, [50]) is None
    # [0, 1, 50] has a low end clamped at 0: no ratio has it as its denominator.
    assert ratio_interval(FAST, [0, 1, 50]) is None


def test_overlapping_intervals_are_no_difference_with_the_margin():
    # [100, 110, 120] -> [85.16, 134.84]; [105, 115, 125] -> [90.16, 139.84]: they overlap.
    found = verdict([105, 115, 125], [100, 110, 120])
    # margin = (24.841377 + 24.841377) / 110 = 0.451661
    assert found.outcome == "same" and found.text == "no difference beyond noise (±45%)"
    assert found.factor == pytest.approx(115 / 110)
    # A small margin keeps a decimal: [100, 101, 99] and [100.5, 101.5, 99.5], s = 1:
    # (2.484138 * 2) / 100 = 4.97%.
    assert verdict([100.5, 101.5, 99.5], [100, 101, 99]).text == "no difference beyond noise (±5.0%)"


def test_the_issues_identical_runs_are_no_difference():
    # Issue 25: 1,590 / 1,491 / 1,005 MiB/s from one target three times; against a second
    # set of three like it, no winner is named.
    assert verdict([1590, 1491, 1005], [1550, 1400, 1100]).outcome == "same"


def test_one_sample_says_so_and_suggests_repeats():
    # The issue's `show --baseline` case: 1,005 against 1,590, one sample each.
    found = verdict([1005], [1590])
    assert found.outcome == "unknown" and found.margin is None
    assert found.text == "1.58x slower on one sample (each side): noise unknown, measure with --repeat 3"
    assert verdict([100], SLOW).text.startswith("2.00x faster on one sample (this side)")
    assert "(the reference)" in verdict(FAST, [50]).text
    assert verdict([0], [5]).text == "no figure to compare"


def test_lower_is_better_for_latencies():
    # 10 ms against 20 ms: half the latency is 2x faster.
    found = verdict([10, 10.5, 9.5], [20, 21, 19], better="lower")
    assert (found.outcome, found.text) == ("better", "2.00x faster")
    assert verdict([20, 21, 19], [10, 10.5, 9.5], better="lower", words=("lower", "higher")).text == "2.00x higher"


samples = st.lists(st.floats(min_value=1, max_value=1e6), min_size=2, max_size=8)


@given(samples, samples)
def test_verdict_is_symmetric(a, b):
    there, back = verdict(a, b), verdict(b, a)
    mirror = {"better": "worse", "worse": "better", "same": "same", "unknown": "unknown"}
    assert back.outcome == mirror[there.outcome]
    assert back.factor == pytest.approx(there.factor)


@given(samples)
def test_a_sample_set_never_differs_from_itself(a):
    assert verdict(a, a).outcome == "same"


def _edge_gap(a, b) -> float:
    """How far apart the intervals' facing ends are, relative to the samples' size."""
    one, other = spread(a), spread(b)
    return min(abs(one.low - other.high), abs(other.low - one.high)) / max(one.maximum, other.maximum)


@given(samples, samples, st.floats(min_value=1e-3, max_value=1e3))
def test_verdict_does_not_depend_on_the_unit(a, b, scale):
    # Intervals whose ends nearly touch could tip either way by rounding: not what this checks.
    if _edge_gap(a, b) > 1e-9:
        assert verdict([v * scale for v in a], [v * scale for v in b]).outcome == verdict(a, b).outcome


def _draws(rng: random.Random, mean: float, cv: float, n: int) -> list[float]:
    return [rng.gauss(mean, mean * cv) for _ in range(n)]


def test_a_a_comparisons_rarely_name_a_winner():
    # 2,000 pairs of 3 samples from one distribution (CV 5%), seeded: a false "faster/slower"
    # in under 2% of them (Welch's t at 5% would name one in 5%).
    rng = random.Random(25)
    false_calls = sum(verdict(_draws(rng, 1000, 0.05, 3), _draws(rng, 1000, 0.05, 3)).outcome != "same"
                      for _ in range(2000))
    assert false_calls < 40


def test_a_b_two_times_is_found():
    # 50 against 100 MiB/s, 3 samples each at CV 5%: named 2x slower nearly always.
    rng = random.Random(26)
    found = [verdict(_draws(rng, 50, 0.05, 3), _draws(rng, 100, 0.05, 3)) for _ in range(500)]
    assert sum(f.outcome == "worse" for f in found) >= 490
    assert all(f.outcome != "better" for f in found)


# ---- hosts -------------------------------------------------------------------------------------

def test_two_hosts_cannot_name_an_outlier():
    # Before: the "median" of two hosts is their mean, 67; 100 is 50% over, 34 is 49% under: slow.
    judged = judge_hosts({"h1": [100], "h2": [34]})
    assert judged.slow == []
    assert judged.note.startswith("two hosts cannot name an outlier (h2 against h1: 2.94x slower on one sample")
    h1, h2 = judged.calls
    assert h2.under_others == pytest.approx(0.66) and h1.under_others == pytest.approx(-(100 - 34) / 34)
    # With repeats the verdict between them is the noise-aware one.
    assert "h1 against h2: 2.00x slower)" in judge_hosts({"h1": SLOW, "h2": FAST}).note


def test_two_hosts_at_zero_have_no_fraction_under_each_other():
    # Two agents' phase that moved nothing (0 B/s each): no fraction of 0 exists, nor a division by it.
    judged = judge_hosts({"h1": [0.0], "h2": [0.0]})
    assert [call.under_others for call in judged.calls] == [None, None] and judged.slow == []
    assert [call.under_others for call in judge_hosts({"h1": [0.0], "h2": [5.0]}).calls] == [1.0, None]


def test_three_hosts_one_slow():
    judged = judge_hosts({"a": [100], "b": [98], "c": [50]})
    # c: the others' median 99, their MAD 1; allowed max(0.15 * 99, 3 * 1) = 14.85; 99 - 50 = 49 > 14.85.
    # a: the others' (98, 50) median 74: a is over it. b likewise.
    assert judged.slow == ["c"] and judged.note == ""
    c = judged.calls[2]
    assert (c.others, c.under_others) == (99, pytest.approx(49 / 99))


def test_evenly_spread_hosts_name_no_outlier():
    # 80: the others (100, 90) median 95, MAD 5; allowed max(14.25, 15) = 15; 95 - 80 = 15 is not more.
    assert judge_hosts({"a": [100], "b": [90], "c": [80]}).slow == []


def test_two_slow_hosts_of_ten_do_not_hide_each_other():
    hosts = {f"h{i}": [100 + i % 3] for i in range(8)} | {"x": [50], "y": [52]}
    assert judge_hosts(hosts).slow == ["x", "y"]


def test_a_noisy_host_is_judged_by_the_top_of_its_interval():
    # c at 80 alone would be slow (others 100: allowed 15, short by 20); measured 60, 100, 80 its
    # interval (mean 80, s 20, +-49.7) reaches 129.7: no longer past the others.
    assert judge_hosts({"a": [100], "b": [100], "c": [80]}).slow == ["c"]
    assert judge_hosts({"a": [100, 100], "b": [100, 100], "c": [60, 100, 80]}).slow == []


def test_latency_hosts_lower_is_better():
    assert judge_hosts({"a": [10], "b": [11], "c": [30]}, better="lower").slow == ["c"]
    assert judge_hosts({"only": [5]}).calls[0].others is None


# ---- gates -------------------------------------------------------------------------------------

def test_split_bound():
    assert split_bound("restore-random>=300MiB/s@low") == ("restore-random>=300MiB/s", "low")
    assert split_bound("active-full.p99<=50ms @ HIGH") == ("active-full.p99<=50ms", "high")
    assert split_bound("restore-random>=300MiB/s") == ("restore-random>=300MiB/s", "median")
    with pytest.raises(InputError, match="unknown bound @lowest"):
        split_bound("x>=1@lowest")


def test_gate_on_median_and_on_the_interval():
    # [310, 320, 330]: median 320; mean 320, s 10, half width 24.841 -> [295.16, 344.84]
    shown = lambda v: f"{v:.1f} MiB/s"  # noqa: E731
    median = judge_bound([310, 320, 330], ">=", 300, shown=shown)
    assert median.met and median.value == 320
    assert median.text == "320.0 MiB/s (median of 3, 95% interval 295.2 MiB/s-344.8 MiB/s, CV 3.1%)"
    low = judge_bound([310, 320, 330], ">=", 300, "low", shown)
    assert not low.met and low.value == pytest.approx(295.158623, abs=1e-5)
    assert low.text.startswith("low end 295.2 MiB/s of 320.0 MiB/s (median of 3")
    assert judge_bound([310, 320, 330], ">=", 300, "high").met
    # A latency gate: p99 <= 50 ms at the high end.
    assert judge_bound([40, 42, 44], "<=", 50, "high").met        # high end 42 + 4.97 = 46.97
    assert not judge_bound([40, 45, 50], "<=", 50, "high").met    # high end 45 + 12.42 = 57.42


def test_gate_on_an_interval_with_one_sample_misses_and_says_why():
    judged = judge_bound([350], ">=", 300, "low")
    assert not judged.met and judged.value is None
    assert "one sample has no interval" in judged.text and "--repeat 3" in judged.text
    assert judge_bound([350], ">=", 300).met


def test_a_tie_is_no_difference_never_one_times_slower():
    # Equal medians on one sample each: no direction, still no noise known.
    found = verdict([100.0], [100.0])
    assert found.outcome == "same"
    assert found.text == "no difference (1.00x) on one sample (each side): noise unknown, measure with --repeat 3"
    assert "slower" not in verdict([100.0], [100.0]).text and "faster" not in verdict([100.0], [100.0]).text
    # 100.4 / 100 = 1.004 rounds to 1.00x: a tie as shown, whichever side is ahead.
    assert verdict([100.0], [100.4]).outcome == "same" and verdict([100.4], [100.0]).outcome == "same"
    # 101 / 100 = 1.01x is still a direction, shown as one.
    assert verdict([100.0], [101.0]).text.startswith("1.01x slower on one sample")


def test_a_tie_beyond_noise_is_still_no_difference():
    # Two steady sets whose intervals part yet whose medians are 0.2% apart: s = 0.1, half width
    # 4.302653 * 0.1 / sqrt(3) = 0.248414; [99.75, 100.25] and [99.95, 100.45] overlap, so make
    # them steadier: s = 0.01 -> half width 0.024841; [99.98, 100.02] vs [100.18, 100.22].
    found = verdict([100.19, 100.2, 100.21], [99.99, 100.0, 100.01])
    assert found.outcome == "same" and found.factor == pytest.approx(1.002)
    # margin = 2 * 0.024841 / 100 = 0.05%
    assert found.text == "no difference (1.00x; noise ±0.0%)"
    # Equal medians with an equal spread: the same words.
    assert verdict([100, 101, 99], [100, 102, 98]).outcome == "same"
