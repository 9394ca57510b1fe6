"""stats.spread: known samples -> known median, CV and 95% interval, the arithmetic written out;
the t table checked against the t distribution itself."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given, strategies as st

from backupbench.stats import T_975, Z_975, nearest_rank, spread, t_975


def _t_cdf_from_zero(x: float, df: int, steps: int = 20_000) -> float:
    """P(0 <= T <= x) for Student's t with `df` degrees of freedom, by Simpson's rule."""
    scale = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)

    def pdf(t: float) -> float:
        return scale * (1 + t * t / df) ** (-(df + 1) / 2)

    h = x / steps
    total = pdf(0) + pdf(x) + sum((4 if i % 2 else 2) * pdf(i * h) for i in range(1, steps))
    return total * h / 3


@pytest.mark.parametrize("df", sorted(T_975))
def test_the_t_table_is_the_0975_quantile(df):
    # Half the distribution lies above 0, so the 0.975 quantile leaves 0.475 between 0 and it.
    assert _t_cdf_from_zero(T_975[df], df) == pytest.approx(0.475, abs=2e-6)


def test_t_closed_forms_and_interpolation():
    assert t_975(1) == pytest.approx(math.tan(math.pi * (0.975 - 0.5)))       # Cauchy
    assert t_975(2) == pytest.approx(0.95 / math.sqrt(2 * 0.975 * 0.025))      # (2p-1)/sqrt(2p(1-p))
    # Between rows (50 lies between 40 and 60) and past the last one: within 0.001 of the exact value.
    assert _t_cdf_from_zero(t_975(50), 50) == pytest.approx(0.475, abs=2e-5)
    assert t_975(1000) == pytest.approx(1.9623, abs=1e-3)
    assert T_975[120] > t_975(10_000) > Z_975
    with pytest.raises(ValueError):
        t_975(0)


def test_three_samples():
    figure = spread([100, 110, 120])
    # mean 110; s = sqrt((100 + 0 + 100) / 2) = 10; CV = 10 / 110 = 9.09%
    assert (figure.median, figure.minimum, figure.maximum, figure.mean) == (110, 100, 120, 110)
    assert figure.stdev == pytest.approx(10)
    assert figure.cv == pytest.approx(10 / 110)
    assert not figure.unstable
    # half width = t(0.975, 2) * s / sqrt(3) = 4.302652730 * 10 / 1.7320508 = 24.841377
    assert figure.half_width == pytest.approx(24.841377, abs=1e-5)
    assert (figure.low, figure.high) == (pytest.approx(85.158623, abs=1e-5), pytest.approx(134.841377, abs=1e-5))
    assert figure.describe(lambda v: f"{v:.0f}") == "110 (median of 3, 95% interval 85-135, CV 9.1%)"


def test_two_samples_are_honestly_wide_and_unstable():
    figure = spread([100, 130])
    # mean 115; s = 30 / sqrt(2) = 21.2132; CV 18.4% > 10%: unstable.
    assert figure.median == 115 and figure.cv == pytest.approx(21.2132 / 115, abs=1e-5)
    assert figure.unstable
    # half width = 12.706205 * 21.2132 / sqrt(2) = 12.706205 * 15 = 190.593: the low end would be
    # -75.6, below 0 for a speed that cannot be: the t interval on the log scale instead. ln 100 =
    # 4.60517, ln 130 = 4.86753; their mean 4.736352, s = 0.185520, half = 12.706205 * 0.185520 /
    # sqrt(2) = 1.666827: exp(3.069525) = 21.532, exp(6.403179) = 603.76.
    assert (figure.low, figure.high) == (pytest.approx(21.532, abs=1e-3), pytest.approx(603.76, abs=1e-2))
    assert figure.method == "log-t" and figure.low > 0
    assert figure.describe(lambda v: f"{v:.0f}").endswith("95% interval (log scale) 22-604, CV 18.4%, unstable)")
    # Samples that can be 0 (a count of errors) keep the t interval, held at 0.
    assert spread([0, 30]).low == 0.0 and spread([0, 30]).method == "t"
    # Negative samples (a difference, say) keep their low end.
    assert spread([-10, 10]).low == pytest.approx(-127.06205, abs=1e-4)


def test_ten_samples():
    figure = spread(range(1, 11))
    # mean 5.5; s = sqrt(82.5 / 9) = 3.0276504; s / sqrt(10) = 0.9574271; x 2.262157163 = 2.1658506
    assert figure.median == 5.5
    assert figure.stdev == pytest.approx(3.0276504, abs=1e-6)
    assert (figure.low, figure.high) == (pytest.approx(3.3341494, abs=1e-6), pytest.approx(7.6658506, abs=1e-6))


def test_one_sample_is_shown_as_one_sample():
    figure = spread([1590.0])
    assert figure.one_sample and figure.n == 1
    assert (figure.stdev, figure.cv, figure.low, figure.high, figure.half_width) == (None,) * 5
    assert not figure.unstable
    assert figure.describe(lambda v: f"{v:,.0f} MiB/s") == "1,590 MiB/s (one sample)"


def test_the_issues_three_identical_runs_are_unstable():
    # Issue 25: one target, identical settings, three times: 1,590 / 1,491 / 1,005 MiB/s.
    figure = spread([1590, 1491, 1005])
    # mean 1,362; s = sqrt((228^2 + 129^2 + 357^2) / 2) = sqrt(98,037) = 313.11; CV 23.0%
    assert figure.median == 1491 and figure.unstable and figure.cv == pytest.approx(313.1086 / 1362, abs=1e-6)


def test_bad_samples_are_refused():
    with pytest.raises(ValueError, match="at least one"):
        spread([])
    with pytest.raises(ValueError, match="finite"):
        spread([1.0, math.nan])
    assert spread([0, 0, 0]).cv == 0.0 and spread([-1, 1]).cv == math.inf


@given(st.lists(st.floats(min_value=0, max_value=1e12), min_size=2, max_size=10))
def test_interval_holds_the_mean_and_median_lies_between_min_and_max(values):
    figure = spread(values)
    assert figure.minimum <= figure.median <= figure.maximum
    assert figure.low is not None and figure.high is not None
    # The t interval holds the mean; on the log scale, the geometric mean; min-max, every sample.
    centre = (figure.mean if figure.method == "t" else statistics.geometric_mean(values) if figure.method == "log-t"
              else figure.median)
    assert figure.low <= centre * (1 + 1e-9) + 1e-9 and figure.high >= centre * (1 - 1e-9) - 1e-9
    assert figure.low >= 0 and (figure.method == "t" or figure.low > 0)


@given(st.lists(st.floats(min_value=1, max_value=1e9), min_size=2, max_size=10),
       st.floats(min_value=1e-3, max_value=1e3))
def test_cv_does_not_depend_on_the_unit(values, scale):
    assert spread([v * scale for v in values]).cv == pytest.approx(spread(values).cv, rel=1e-6, abs=1e-12)


def test_nearest_rank_is_unchanged():
    assert nearest_rank([1, 2, 3, 4], 50) == 2 and nearest_rank([], 99) == 0.0 and nearest_rank([5], 99) == 5
