"""The page around a report: the self-contained HTML document, its CSS, and the escaped
building blocks (tables, sections, callouts, figures) every report section is made of.

Every piece of text goes through `e` (html.escape, quotes too). `write` puts the page on
disk atomically.
"""

from __future__ import annotations

import os
import re
import tempfile
from html import escape
from pathlib import Path
from typing import Any, Iterable, Sequence


from backupbench import __version__, units
from backupbench.analysis.noise import REPEAT_FIX
from backupbench.redaction import is_secret_key, redact
from backupbench.report.tables import Styled

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

CSS = """
:root { --ink: #1b1f24; --muted: #5b6470; --line: #d5d9de; --soft: #f4f6f8; --accent: #0b5cad;
        --warn-bg: #fff6db; --warn-line: #e0b100; --bad-bg: #fde8e8; --bad-line: #c62828; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0 auto; max-width: 1100px; padding: 28px 32px 48px; color: var(--ink); background: #fff;
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "DejaVu Sans", sans-serif; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 32px 0 10px; padding-bottom: 4px; border-bottom: 2px solid var(--ink); }
h3 { font-size: 15px; margin: 20px 0 8px; }
p { margin: 6px 0; }
.subtitle { color: var(--muted); margin: 0 0 16px; overflow-wrap: anywhere; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0 0 8px; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; overflow-wrap: anywhere; }
table { border-collapse: collapse; margin: 8px 0 4px; font-variant-numeric: tabular-nums; max-width: 100%; }
.table-title { font-weight: 600; margin: 14px 0 0; }
th, td { padding: 4px 10px; border-bottom: 1px solid var(--line); vertical-align: top; text-align: left; }
thead th { border-bottom: 2px solid var(--ink); font-weight: 600; }
td.num, th.num { text-align: right; }
td.num { white-space: nowrap; }
.wraps { white-space: normal; }
td:first-child { white-space: nowrap; }
table.kv td:last-child { overflow-wrap: anywhere; }
tbody tr:nth-child(even) td { background: var(--soft); }
.strong { font-weight: 700; }
.flag-bad { color: var(--bad-line); }
.flag-warn { color: #8a6100; }
.status { font-weight: 600; color: #8a6100; }
.table-note { color: var(--muted); font-size: 12.5px; margin: 2px 0 14px; }
.table-notes { color: var(--muted); font-size: 12.5px; margin: 2px 0 14px; padding-left: 22px; }
.note-mark { color: var(--muted); margin-left: 1px; line-height: 0; }
.wide { overflow-x: auto; }
.callout { border-left: 4px solid var(--warn-line); background: var(--warn-bg); padding: 8px 12px; margin: 10px 0; }
.callout.bad { border-color: var(--bad-line); background: var(--bad-bg); }
.callout ul { margin: 4px 0 0; padding-left: 20px; }
.callout li { overflow-wrap: anywhere; }
.headline { font-size: 15px; }
.run-headline { font-size: 16px; margin: 0 0 14px; padding: 8px 12px; border-left: 4px solid var(--accent);
                background: var(--soft); }
.run-headline.bad { border-color: var(--bad-line); background: var(--bad-bg); }
figure { margin: 12px 0 20px; }
figcaption { color: var(--muted); font-size: 12.5px; margin-top: 2px; overflow-wrap: anywhere; }
svg.chart { display: block; width: 100%; max-width: 860px; height: auto; }
pre { background: var(--soft); border: 1px solid var(--line); padding: 10px 12px; overflow-x: auto;
      font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; white-space: pre-wrap;
      overflow-wrap: anywhere; }
pre.commands .cmd { display: block; padding-left: 2.5em; text-indent: -2.5em; margin-bottom: 3px; }
code { font: 12.5px ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; border-top: 1px solid var(--line); padding-top: 8px; }
@media print {
  @page { margin: 14mm 12mm; }
  body { max-width: none; padding: 0; font-size: 10pt; }
  h2 { break-after: avoid; }
  h3 { break-after: avoid; }
  table, figure, .callout, pre { break-inside: avoid; }
  tbody tr:nth-child(even) td { background: none; }
  table { font-size: 8.5pt; }
  th, td { padding: 2px 5px; }
  pre { font-size: 8pt; }
  svg.chart { max-width: 100%; }
  .wide { overflow: visible; }
}
"""


def e(value: Any) -> str:
    return escape(str(value), quote=True)


def mib(value: float | None) -> str:
    return "-" if not value else f"{value / units.MiB:,.1f}"


def table(headings: Sequence[str], rows: Iterable[Sequence[str]], *, caption: str = "", numeric_from: int = 1,
          css: str = "", notes: Notes | None = None) -> str:
    """rows: already-escaped cell HTML. Columns from `numeric_from` on are right-aligned;
    `notes`: the sentences the rows' cells were marked with (Notes.mark), said below the table."""
    def num(i: int) -> str:
        return ' class="num"' if i >= numeric_from else ""

    head = "".join(f'<th scope="col"{num(i)}>{e(h)}</th>' for i, h in enumerate(headings))
    body = []
    for row in rows:
        cells = "".join(f"<td{num(i)}>{cell}</td>" for i, cell in enumerate(row))
        body.append(f"<tr>{cells}</tr>")
    title = f'<p class="table-title">{e(caption)}</p>' if caption else ""
    cls = f' class="{css}"' if css else ""
    said = notes.html() if notes is not None else ""
    return (f'<div class="wide">{title}<table{cls}><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>{said}</div>\n')


class Notes:
    """The sentences moved out of one table's cells, numbered in the order first marked; a
    sentence marked twice keeps its number. A sentence in a cell of a right-aligned (unbroken)
    column widens its table past the page; the cell keeps a short label and the note's number."""

    def __init__(self) -> None:
        self.sentences: list[str] = []

    def mark(self, label_html: str, sentence: str) -> str:
        if sentence not in self.sentences:
            self.sentences.append(sentence)
        number = self.sentences.index(sentence) + 1
        return f'{label_html}<sup class="note-mark">{number}</sup>'

    def html(self) -> str:
        if not self.sentences:
            return ""
        items = "".join(f"<li>{e(sentence)}</li>" for sentence in self.sentences)
        return f'<ol class="table-notes">{items}</ol>'


# noise.verdict's caveat of a comparison on one sample: the same sentence in every such cell.
ONE_SAMPLE = re.compile(r" on one sample( \([^)]*\))?: noise unknown, " + re.escape(REPEAT_FIX))


def noted(text: str, notes: Notes) -> str:
    """`text` as cell HTML, its one-sample caveat ('2.01x faster on one sample (each side): noise
    unknown, measure with --repeat 3') moved into `notes`: '2.01x faster' and the note's number."""
    found = ONE_SAMPLE.search(text)
    if found is None:
        return e(text)
    sentence = found.group(0).strip().replace("on one sample", "One sample", 1)
    label = text[:found.start()] + text[found.end():]
    return notes.mark(e(label), sentence)


# A cell longer than this that says "label: sentence" keeps its label, the sentence a note.
LONG_CELL = 48


def cell(value: str, notes: Notes | None = None) -> str:
    """A table model's cell (report/tables.py: str or Styled) as HTML; the terminal's bold stays
    bold. With `notes`, a long "label: ...: sentence" cell (an S3 lock check's FAIL and its
    reasons) keeps its label up to its second colon and says the whole below the table."""
    text = str(value)
    first = text.find(": ")
    if notes is not None and len(text) > LONG_CELL and first > 0:
        second = text.find(": ", first + 2)
        label = text[:second if second > 0 else first]
        shown = notes.mark(e(label), text)
    else:
        shown = e(text)
    if isinstance(value, Styled):
        # A flag (red: cached, yellow: unstable) keeps its colour as the terminal's does.
        classes = [name for name, on in (("strong", "bold" in value.style), ("flag-bad", "red" in value.style),
                                         ("flag-warn", "yellow" in value.style)) if on]
        return f'<span class="{" ".join(classes)}">{shown}</span>' if classes else shown
    return shown


def section(title: str, body: str, anchor: str = "") -> str:
    ident = f' id="{e(anchor)}"' if anchor else ""
    return f"<section{ident}>\n<h2>{e(title)}</h2>\n{body}</section>\n"


def callout(lines: Sequence[str], title: str, bad: bool = False) -> str:
    items = "".join(f"<li>{e(line)}</li>" for line in lines)
    return f'<div class="callout{" bad" if bad else ""}"><strong>{e(title)}</strong><ul>{items}</ul></div>\n'


def figure(svg: str, caption: str = "") -> str:
    cap = f"<figcaption>{e(caption)}</figcaption>" if caption else ""
    return f"<figure>\n{svg}{cap}</figure>\n"


def document(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="backupbench {e(__version__)}">\n'
        f"<title>{e(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}"
        f"<footer>Written by backupbench {e(__version__)} from the stored results. "
        "Self-contained: no scripts, fonts or remote resources.</footer>\n</body>\n</html>\n"
    )


def flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        out: list[tuple[str, Any]] = []
        for key in value:
            out += flatten(value[key], f"{prefix}.{key}" if prefix else str(key))
        return out or [(prefix, "{}")]
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        out = []
        for i, item in enumerate(value):
            out += flatten(item, f"{prefix}[{i}]")
        return out
    return [(prefix, value)]


def value_text(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if is_secret_key(key) and value not in ("", "-"):
        return "(not shown)"
    if isinstance(value, list):
        return redact(", ".join(str(v) for v in value)) or "[]"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and value >= 1024 and key.rsplit(".", 1)[-1].endswith(("size", "_bytes")):
        return f"{units.format_size(value)} ({value:,} bytes)"
    return redact(str(value))


def kv_table(pairs: Iterable[tuple[str, Any]], caption: str = "") -> str:
    rows = [[f"<code>{e(k)}</code>", e(value_text(k, v))] for k, v in pairs]
    return table(["key", "value"], rows, caption=caption, numeric_from=99, css="kv") if rows else ""




def write(path: Path, html: str) -> Path:
    """Write the page atomically (a temporary file renamed over `path`); returns the path."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or Path("."))
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(html)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
