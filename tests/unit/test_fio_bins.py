"""fio's json+ latency histograms: read as fio reads them, merged across hosts.

The json+ fixtures are real fio 3.33 client-mode output: client-two-hosts-jsonplus.json (two
servers, 127.0.0.1 and 127.0.0.2 port 18765, a randwrite job each with lat_percentiles=1),
client-jsonplus-clat.json (one server, a randread and a write job, fio's default completion
latency percentiles) and client-ipv6-jsonplus.json (a server on ::1 port 18767); and a local
run, jsonplus-50-ios.json: 50 random 4 KiB writes with percentile_list=30:60, where 30% of the
samples is exactly 15 (a case that tells fio's arithmetic apart, see fio_bins.percentiles).
"""

import json
from fractions import Fraction
from itertools import accumulate

import pytest

from backupbench.engines import fio_bins
from backupbench.errors import EngineError
from backupbench.stats import nearest_rank

JSONPLUS = ("client-two-hosts-jsonplus.json", "client-jsonplus-clat.json", "client-ipv6-jsonplus.json",
            "jsonplus-50-ios.json")
# fio's default percentile list (its percentile_list option).
FIO_DEFAULT = (1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99)


def histograms(fixtures, name):
    """Every latency block of the file that has bins: (where, block)."""
    text = (fixtures / "fio" / name).read_text()
    data, _ = json.JSONDecoder().raw_decode(text, text.index("{"))
    return [(f"{name} {entry['jobname']} {direction} {kind}", entry[direction][kind])
            for entry in data.get("client_stats") or data["jobs"]
            for direction in ("read", "write") for kind in ("lat_ns", "clat_ns")
            if "bins" in entry[direction][kind]]


@pytest.mark.parametrize("name", JSONPLUS)
def test_one_histogram_gives_exactly_fios_own_percentiles(fixtures, name):
    found = histograms(fixtures, name)
    assert found  # the fixture really carries histograms
    for where, block in found:
        fio_says = {float(p): value for p, value in block["percentile"].items()}
        assert fio_bins.percentiles(fio_bins.parse(block["bins"]), fio_says) == fio_says, where
        assert sum(fio_bins.parse(block["bins"]).values()) == block["N"], where


def test_the_clat_fixture_has_both_directions_and_the_lat_fixture_total_latency(fixtures):
    kinds = {" ".join(where.split()[-2:]) for where, _ in histograms(fixtures, JSONPLUS[1])}
    assert kinds == {"read clat_ns", "write clat_ns"}
    assert {where.split()[-1] for where, _ in histograms(fixtures, JSONPLUS[0])} == {"lat_ns"}


def test_a_percentile_is_the_first_bucket_reaching_its_share():
    bins = {100: 99, 2000: 1}
    # 99 of 100 at 100 ns: the 99th percentile is reached there, not beyond.
    assert fio_bins.percentiles(bins, (50.0, 99.0, 99.5)) == {50.0: 100, 99.0: 100, 99.5: 2000}
    assert fio_bins.percentile({7: 1}, 99.9) == 7
    assert fio_bins.percentile({}, 99.0) is None and fio_bins.percentiles({5: 0}) == {}
    with pytest.raises(ValueError):
        fio_bins.percentiles(bins, (0.0,))


def test_merged_p99_is_neither_the_worst_host_nor_the_average():
    fast_with_a_tail = {100: 985, 10_000: 15}   # p99 10 us
    steady = {200: 990, 3_000: 10}              # p99 200 ns
    per_host = [fio_bins.percentile(h, 99.0) for h in (fast_with_a_tail, steady)]
    merged = fio_bins.merge([fast_with_a_tail, steady])
    assert merged == {100: 985, 200: 990, 3_000: 10, 10_000: 15}
    p99 = fio_bins.percentile(merged, 99.0)
    assert per_host == [10_000, 200]
    assert p99 == 3_000 and p99 not in per_host and p99 != max(per_host) and p99 != sum(per_host) / 2
    # Bucket values here are the samples themselves: the merged figure is the true p99 of all.
    samples = sorted(value for bins in (fast_with_a_tail, steady) for value, n in bins.items() for _ in range(n))
    assert p99 == nearest_rank(samples, 99)


def test_merging_real_hosts_adds_every_count(fixtures):
    blocks = [fio_bins.parse(block["bins"]) for _, block in histograms(fixtures, JSONPLUS[0])]
    assert len(blocks) == 2
    merged = fio_bins.merge(blocks)
    assert sum(merged.values()) == sum(sum(b.values()) for b in blocks)
    assert all(merged[k] == sum(b.get(k, 0) for b in blocks) for k in merged)
    p99s = [fio_bins.percentile(b, 99.0) for b in blocks]
    assert min(p99s) <= fio_bins.percentile(merged, 99.0) <= max(p99s)


def test_parse_takes_fios_string_keys_and_refuses_garbage():
    assert fio_bins.parse({"1024": 3, "2048": 0}) == {1024: 3}
    for bad in ({"x": 1}, {"10": "many"}, {"-5": 1}, {"5": -1}):
        with pytest.raises(EngineError, match="bins"):
            fio_bins.parse(bad)


def test_thirty_percent_of_fifty_is_the_fifteenth_sample_as_fio_says(fixtures):
    """Where fio's source order, (long double)30/100*50, is a hair over 15 and would take the
    16th sample: the real fio took the 15th, and so do we."""
    (_, block), = histograms(fixtures, "jsonplus-50-ios.json")
    bins = fio_bins.parse(block["bins"])
    ordered = sorted(bins.items())
    running = dict(zip((value for value, _ in ordered), accumulate(count for _, count in ordered)))
    fifteenth = next(value for value, reached in running.items() if reached >= 15)
    sixteenth = next(value for value, reached in running.items() if reached >= 16)
    assert block["N"] == 50 and fifteenth != sixteenth  # the fixture does tell the two apart
    assert block["percentile"]["30.000000"] == fifteenth == fio_bins.percentile(bins, 30.0)


def test_the_exact_share_agrees_with_fios_compiled_arithmetic():
    """fio's binary (built with -ffast-math) compares the running count with p * (total * 0.01L)
    in x87 long double: for each of its default percentiles and every total up to 50,000 the
    smallest count passing that is the smallest passing the exact share."""
    numpy = pytest.importorskip("numpy")
    if numpy.finfo(numpy.longdouble).nmant != 63:
        pytest.skip("numpy's long double here is not x87 extended precision")
    totals = range(1, 50_001)
    hoisted = numpy.array(totals, dtype=numpy.uint64).astype(numpy.longdouble) * (
        numpy.longdouble(1) / numpy.longdouble(100))
    for p in FIO_DEFAULT:
        fio_threshold = numpy.longdouble(p) * hoisted
        share = Fraction(p) / 100
        smallest = numpy.array([-(-share.numerator * n // share.denominator) for n in totals],
                               dtype=numpy.uint64).astype(numpy.longdouble)
        assert numpy.all(smallest >= fio_threshold), p
        assert not numpy.any(smallest - 1 >= fio_threshold), p
