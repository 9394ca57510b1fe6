"""Every colour of a report page, one meaning each: the one owner charts ask.

Two kinds of colour, kept apart so neither can mean the other:
- a kind of figure has its own colour on every page (MEANINGS): reads are always blue, writes
  always vermillion, a phase's effective speed a dark grey, CPU %iowait a light one;
- a thing the page names (a layout, a host, a run, a disk, a phase on a fault timeline) gets
  one colour the first time a chart asks (`Colours.of`) and keeps it in every chart of the page;
  the page names its layouts and hosts first, so they keep the same colours however the charts
  are ordered.
Okabe-Ito's colours (told apart by colour-blind readers, distinct in greyscale print) serve
both: blue and vermillion for reads and writes, the rest, then Paul Tol's muted ones, for
things. A page naming more things than there are colours reuses them from the start.
"""

from __future__ import annotations

from typing import Iterable

READ = "#0072B2"
WRITE = "#D55E00"
SPEED = "#444444"        # a phase's effective speed, when no layout or run tells bars apart
PER_FILE = "#8C6D31"     # a small-file phase's per-file latency
REQUEST = "#332288"      # an S3 phase's per-request latency
IOWAIT = "#888888"
REFERENCE = "#000000"    # a median, the rebuild's percent, a latency's p50 and p99: what the others are read against
BAD = "#c62828"          # a slow host's edge, a plan's fill past 100%; the page's CSS --bad-line
FILL = "#2F4B7C"         # a repository plan's fill over time, while it fits
CLONED = "#AA4499"       # an extent a file shares with others (block clone), on its extent map
JOB_TIME = "#3F6E3A"     # a backup job's time, over a repository's simulated age
FREE_SPACE = "#7F6A93"   # how cut up a filesystem's free space is
MEANINGS = {"read": READ, "write": WRITE, "speed": SPEED, "per-file": PER_FILE, "request": REQUEST,
            "iowait": IOWAIT, "reference": REFERENCE, "bad": BAD, "fill": FILL, "cloned": CLONED,
            "job time": JOB_TIME, "free space": FREE_SPACE}
THINGS = ("#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#F0E442", "#117733", "#882255", "#999933", "#44AA99")


class Colours:
    """One page's colours of things: the same name gets the same colour in every chart."""

    def __init__(self, names: Iterable[str] = ()):
        self._given: dict[str, str] = {}
        for name in names:
            self.of(name)

    def of(self, name: str) -> str:
        if name not in self._given:
            self._given[name] = THINGS[len(self._given) % len(THINGS)]
        return self._given[name]

    def given(self) -> dict[str, str]:
        """Every name coloured so far and its colour, in the order they were given."""
        return dict(self._given)
