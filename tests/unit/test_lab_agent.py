"""Pure tests of the agent stream: output and markers from the guest's ttyS1."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from backupbench.lab.agent import AgentStream, cpu_busy_fraction, parse_cpu_pair
from backupbench.lab.vm import GuestResult, LabError, python_environment


def _feed_all(stream: AgentStream, chunks: list[bytes]):
    text, events = "", []
    for chunk in chunks:
        got, evs = stream.feed(chunk)
        text += got
        events += evs
    return text, events


def test_ready_then_output_then_done():
    stream = AgentStream("n1")
    text, events = _feed_all(stream, [b"\x1eLABREADY n1\n", b"hello\nwor", b"ld\n\x1eLABDONE n1 7\n"])
    assert text == "hello\nworld\n"
    assert [(e.kind, e.value) for e in events] == [("ready", ""), ("done", "7")]


def test_marker_split_across_chunks_is_not_shown():
    stream = AgentStream("abc")
    data = b"out\x1eLABDONE abc 0\n"
    text, events = _feed_all(stream, [data[i:i + 1] for i in range(len(data))])
    assert text == "out" and [e.value for e in events] == ["0"]


def test_other_nonce_is_output():
    stream = AgentStream("mine")
    text, events = stream.feed(b"\x1eLABDONE other 0\nrest\n")
    # held back until it cannot be a marker of ours... it never becomes one; the done marker flushes it
    text2, events2 = stream.feed(b"\x1eLABDONE mine 1\n")
    assert events == [] and "LABDONE other 0\nrest\n" in text + text2
    assert [e.value for e in events2] == ["1"]


def test_utf8_split_and_invalid_bytes():
    stream = AgentStream("n")
    euro = "€".encode()
    text, _ = _feed_all(stream, [b"a" + euro[:1], euro[1:] + b"\xff\n"])
    assert text == "a€\ufffd\n"


def test_done_marker_carries_cpu_lines():
    stream = AgentStream("n")
    before = "cpu  100 0 50 800 50 0 0 0 0 0"
    after = "cpu  400 0 150 900 50 0 0 0 0 0"
    _, events = stream.feed(f"x\x1eLABDONE n 0 {before}|{after}\n".encode())
    assert events[0].value == "0" and events[0].extra == f"{before}|{after}"
    # 300 user + 100 system busy out of 500 ticks
    assert parse_cpu_pair(events[0].extra) == pytest.approx(0.8)


def test_cpu_busy_fraction_edge_cases():
    assert cpu_busy_fraction("cpu 1 2 3 4 5", "cpu 1 2 3 4 5") is None  # no time passed
    assert cpu_busy_fraction("garbage", "cpu 1 2 3 4 5") is None
    assert parse_cpu_pair("") is None
    assert cpu_busy_fraction("cpu 0 0 0 100 0 0 0 0", "cpu 0 0 0 200 0 0 0 0") == 0.0


def test_fail_marker():
    stream = AgentStream("n")
    _, events = stream.feed(b"\x1eLABFAIL cannot mount the host root\n")
    assert [(e.kind, e.value) for e in events] == [("fail", "cannot mount the host root")]


def test_cpu_saturated():
    assert GuestResult("x", 0, "", 1.0, 0.95).cpu_saturated
    assert not GuestResult("x", 0, "", 1.0, 0.5).cpu_saturated
    assert not GuestResult("x", 0, "", 1.0, None).cpu_saturated


def test_guest_result_check():
    assert GuestResult(["true"], 0, "", 0.1).check().returncode == 0
    with pytest.raises(LabError, match=r"`lvs` failed \(exit 5\): no VG"):
        GuestResult(["lvs"], 5, "x\nno VG\n", 0.1).check()


def test_python_environment_puts_this_interpreter_first():
    env = python_environment()
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
    assert "/usr/sbin" in env["PATH"].split(":")
    for entry in env.get("PYTHONPATH", "").split(":"):
        if entry:
            assert not entry.startswith(sys.base_prefix)
