"""The CPU the live progress display costs (issue 42's benchmark): the progress bars and live
figures a run draws (cli/progress.RichReporter, fed as a fio phase feeds it: its MiB/s and IOPS
once a second), on a terminal, against the same seconds with --quiet's reporter; the CPU time
of this process over the wall time, as a share of one core. Goal: under 1%.

    python bench/live_display.py [--rounds 3] [--seconds 10] [--phases 5]

A whole run's CPU is mostly fio's and would bury a display's share in its noise: here the
display is all there is. Rendering goes to /dev/null through a console that believes it is a
terminal, so rich draws what it would draw on one (its refresh thread included).
"""

from __future__ import annotations

import argparse
import sys
import time

from _common import ROOT, ratio_line, spread

sys.path.insert(0, str(ROOT / "src"))
from rich.console import Console  # noqa: E402

from backupbench.cli.progress import QuietReporter, RichReporter  # noqa: E402

GOAL = 0.01


def _feed(reporter, seconds: float, phases: int) -> tuple[float, float]:
    """Phases one after another, each told its progress and live figures once a second, as fio's
    ETA lines arrive; (CPU seconds of this process, wall seconds)."""
    cpu, wall = time.process_time(), time.monotonic()
    per_phase = seconds / phases
    for number in range(phases):
        name = f"phase-{number}"
        reporter.stage_started(name, name)
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < per_phase:
            reporter.stage_progress(name, elapsed / per_phase, f"w={1200 + number:,}MiB/s w={2400 + number:,} IOPS")
            time.sleep(1.0)
        reporter.stage_finished(name, None)
    return time.process_time() - cpu, time.monotonic() - wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--phases", type=int, default=5)
    args = parser.parse_args()
    shares = []
    with open("/dev/null", "w") as sink:
        print(f"{'round':>5}{'live CPU s':>12}{'quiet CPU s':>13}{'wall s':>9}{'share of a core':>17}")
        for round_number in range(1, args.rounds + 1):
            console = Console(file=sink, force_terminal=True, width=140)
            with RichReporter(console) as live:
                live_cpu, wall = _feed(live, args.seconds, args.phases)
            quiet_cpu, _ = _feed(QuietReporter(), args.seconds, args.phases)
            shares.append((live_cpu - quiet_cpu) / wall)
            print(f"{round_number:>5}{live_cpu:>12.3f}{quiet_cpu:>13.3f}{wall:>9.1f}{shares[-1]:>17.3%}")
    verdict = "ok" if spread(shares).median < GOAL else "OVER GOAL"
    print(ratio_line("live display CPU / one core", shares, f"< {GOAL}", verdict, what="rounds", digits=4))
    return 0


if __name__ == "__main__":
    sys.exit(main())
