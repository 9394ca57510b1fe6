"""Comparisons that know noise: verdicts between two sample sets, the slow-host rule, and gates
on a figure's interval. Pure: samples in (stats.spread), words and flags out.

Verdict rule: "x.xx faster/slower" only when the two 95% intervals (stats.py: Student's t of
the mean) do not overlap; otherwise "no difference beyond noise (+-y%)", y being the
difference the two intervals would have to clear: (half width of one + half width of the
other) / the reference's mean. Why non-overlap rather than Welch's t-test at 5%: it is the
rule a reader can check by eye in any table that prints the intervals, and it is stricter (for
equal spreads two intervals part only at p < ~0.006). A report draws many comparisons at once
(5 operations x several layouts x states): at 5% each, 20 comparisons of identical setups
would name a false winner 64% of the time; the stricter rule keeps that near 10%. A real
difference of 2x, measured 3 times at a few % CV, still parts the intervals by far.
With one sample on either side nothing is known of the noise: the verdict says so, shows
the bare factor, and suggests --repeat 3. A factor that rounds to 1.00x (an exact tie among
them) is "no difference" whatever the intervals: it names no direction.

Slow hosts (`judge_hosts`): a host is compared with the *others*, never with a median it is
part of (with two hosts that median is their mean, and one host was always "slow", -66% /
+66%). With three hosts or more, a host is slow when it lies under the others' median by more
than both 15% and three times the others' median absolute deviation (about two standard
deviations: the others' own spread); a host measured several times is judged by the top of its
interval, so its noise cannot make it slow. Two hosts cannot name an outlier: either may be
the odd one. The verdict between them is still given, and the fix (a third host).

Gates on an interval (`split_bound`, `judge_bound`), used by analysis/gates.py: `--expect` holds the median against the threshold and prints the interval;
`restore-random>=300MiB/s@low` holds the interval's low end (met only when even the low end
of the 95% interval meets it: a strict CI gate), `@high` its high end (`>=...@high` misses
only when the whole interval is under: a lenient one), `@median` the median (the default).
"""

from __future__ import annotations

import operator
import re
import statistics
from dataclasses import dataclass
from typing import Callable, Literal, Mapping, Sequence

from backupbench.errors import InputError
from backupbench.stats import Spread, spread

Better = Literal["higher", "lower"]
Outcome = Literal["better", "worse", "same", "unknown"]
REPEAT_FIX = "measure with --repeat 3"
# A host this far under the others' median (and past their spread) is slow (issue 15).
SLOW_FRACTION = 0.15
# ... and past this many times the others' median absolute deviation (~2 standard deviations).
SPREAD_FACTOR = 3.0


def _percent(fraction: float) -> str:
    return f"{fraction:.1%}" if fraction < 0.1 else f"{fraction:.0%}"


@dataclass(frozen=True)
class Verdict:
    """`current` against `reference`: better/worse only beyond noise; `factor` >= 1 (medians,
    the larger over the smaller); `margin`: the relative difference noise could make (None
    with one sample)."""

    outcome: Outcome
    factor: float | None
    margin: float | None
    text: str


def verdict(current: Sequence[float] | Spread, reference: Sequence[float] | Spread, better: Better = "higher",
            words: tuple[str, str] = ("faster", "slower")) -> Verdict:
    """The wording every comparison uses: '1.58x slower', 'no difference beyond noise (+-12%)',
    or with one sample '1.58x slower on one sample: noise unknown, measure with --repeat 3'."""
    mine = current if isinstance(current, Spread) else spread(current)
    theirs = reference if isinstance(reference, Spread) else spread(reference)
    if mine.median <= 0 or theirs.median <= 0:
        return Verdict("unknown", None, None, "no figure to compare")
    factor = max(mine.median, theirs.median) / min(mine.median, theirs.median)
    # Ahead by the medians shown; equal medians, by the means the intervals are of.
    mine_key, theirs_key = (mine.median, mine.mean), (theirs.median, theirs.mean)
    ahead = mine_key > theirs_key if better == "higher" else mine_key < theirs_key
    word = words[0] if ahead else words[1]
    # A factor shown as 1.00x is no direction at all: "1.00x slower" would name a loser of a tie.
    tied = f"{factor:,.2f}" == "1.00"
    if mine.one_sample or theirs.one_sample:
        which = "each side" if mine.one_sample and theirs.one_sample else (
            "this side" if mine.one_sample else "the reference")
        if tied:
            return Verdict("same", factor, None,
                           f"no difference (1.00x) on one sample ({which}): noise unknown, {REPEAT_FIX}")
        return Verdict("unknown", factor, None,
                       f"{factor:,.2f}x {word} on one sample ({which}): noise unknown, {REPEAT_FIX}")
    assert mine.low is not None and mine.high is not None and theirs.low is not None and theirs.high is not None
    margin = ((mine.half_width or 0.0) + (theirs.half_width or 0.0)) / theirs.mean
    if mine.low > theirs.high or theirs.low > mine.high:
        if tied:  # parted by a hair on very steady samples: still no difference worth a word
            return Verdict("same", factor, margin, f"no difference (1.00x; noise ±{_percent(margin)})")
        return Verdict("better" if ahead else "worse", factor, margin, f"{factor:,.2f}x {word}")
    return Verdict("same", factor, margin, f"no difference beyond noise (±{_percent(margin)})")


def ratio_interval(current: Sequence[float] | Spread, reference: Sequence[float] | Spread) -> tuple[float, float] | None:
    """The ratios current / reference the two 95% intervals allow: (current's low / reference's
    high, current's high / reference's low); None with one sample on either side or a reference
    interval reaching 0. Wider than an interval of the ratio itself: it is the verdict's rule
    (both intervals) read as a range, so a true ratio outside it is a verdict that misled."""
    mine = current if isinstance(current, Spread) else spread(current)
    theirs = reference if isinstance(reference, Spread) else spread(reference)
    if mine.low is None or mine.high is None or theirs.low is None or theirs.high is None or theirs.low <= 0:
        return None
    return mine.low / theirs.high, mine.high / theirs.low


# ---- hosts ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class HostCall:
    host: str
    value: float                 # the host's median
    others: float | None         # the other hosts' median
    under_others: float | None   # fraction under the others' median (0.22 = 22% under; negative = over)
    slow: bool


@dataclass(frozen=True)
class HostsJudgement:
    calls: list[HostCall]
    note: str = ""               # why no host can be named (two hosts), else ''

    @property
    def slow(self) -> list[str]:
        return [call.host for call in self.calls if call.slow]


def _mad(values: Sequence[float]) -> float:
    centre = statistics.median(values)
    return statistics.median(abs(value - centre) for value in values)


def _under(value: float, reference: float, better: Better) -> float:
    """How far `value` falls short of `reference`, as a fraction of it (negative: ahead)."""
    return (reference - value) / reference if better == "higher" else (value - reference) / reference


def _two_hosts(spreads: dict[str, Spread], better: Better) -> HostsJudgement:
    (first, one), (second, other) = spreads.items()
    # Against a 0 (a phase that moved no bytes) no fraction exists: None, as with three hosts.
    calls = [HostCall(first, one.median, other.median, _under(one.median, other.median, better) if other.median else None,
                      False),
             HostCall(second, other.median, one.median, _under(other.median, one.median, better) if one.median else None,
                      False)]
    worse, ahead = (first, second) if calls[0].under_others and calls[0].under_others > 0 else (second, first)
    between = verdict(spreads[worse], spreads[ahead], better)
    return HostsJudgement(calls, f"two hosts cannot name an outlier ({worse} against {ahead}: {between.text}); "
                                 "either may be the odd one: a third host would tell")


def judge_hosts(samples: Mapping[str, Sequence[float]], better: Better = "higher",
                fraction: float = SLOW_FRACTION) -> HostsJudgement:
    """Each host against the others (module docstring); `samples`: each host's samples of one
    operation's headline figure (one each for a single run)."""
    spreads = {host: spread(values) for host, values in samples.items()}
    if len(spreads) < 2:
        return HostsJudgement([HostCall(host, s.median, None, None, False) for host, s in spreads.items()])
    if len(spreads) == 2:
        return _two_hosts(spreads, better)
    calls = []
    for host, mine in spreads.items():
        others = [s.median for name, s in spreads.items() if name != host]
        reference = statistics.median(others)
        # A host measured several times is judged by its best plausible value: the interval's end.
        best = mine.median if mine.one_sample else (mine.high if better == "higher" else mine.low)
        assert best is not None
        shortfall = _under(best, reference, better) * reference if reference else 0.0
        allowed = max(fraction * reference, SPREAD_FACTOR * _mad(others))
        under = _under(mine.median, reference, better) if reference else None
        calls.append(HostCall(host, mine.median, reference, under, reference > 0 and shortfall > allowed))
    return HostsJudgement(calls)


# ---- gates on the interval ------------------------------------------------------------------

Bound = Literal["median", "low", "high"]
BOUNDS: tuple[Bound, ...] = ("median", "low", "high")
_BOUND_SUFFIX = re.compile(r"^(?P<expectation>.*?)\s*@\s*(?P<bound>[A-Za-z]+)\s*$")
COMPARE: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, "<=": operator.le,
                                                       ">": operator.gt, "<": operator.lt}


def split_bound(text: str) -> tuple[str, Bound]:
    """'restore-random>=300MiB/s@low' -> ('restore-random>=300MiB/s', 'low'); without a suffix
    the median. InputError naming the bounds for any other suffix."""
    found = _BOUND_SUFFIX.match(text)
    if found is None:
        return text, "median"
    bound = found["bound"].lower()
    if bound not in BOUNDS:
        raise InputError(f"--expect {text!r}: unknown bound @{found['bound']}",
                         "end with @low (the 95% interval's low end must meet it), @high, or @median (the default)")
    return found["expectation"], bound  # type: ignore[return-value]


@dataclass(frozen=True)
class BoundJudgement:
    met: bool
    value: float | None          # the value held against the threshold (None: none can be)
    text: str                    # what was measured, with the interval


def judge_bound(samples: Sequence[float] | Spread, op: str, threshold: float, bound: Bound = "median",
                shown: Callable[[float], str] = lambda value: f"{value:,.4g}") -> BoundJudgement:
    """One figure's samples against `op threshold` at `bound`; `shown` formats a value."""
    figure = samples if isinstance(samples, Spread) else spread(samples)
    measured = figure.describe(shown)
    if bound == "median":
        return BoundJudgement(COMPARE[op](figure.median, threshold), figure.median, measured)
    if figure.one_sample:
        return BoundJudgement(False, None, f"{measured}: one sample has no interval to hold @{bound} against, "
                                           f"{REPEAT_FIX}")
    value = figure.low if bound == "low" else figure.high
    assert value is not None
    return BoundJudgement(COMPARE[op](value, threshold), value, f"{bound} end {shown(value)} of {measured}")
