"""A stored run as one self-contained HTML page: the terminal's tables plus charts.

The page loads nothing: CSS is inline, charts are inline SVG (text drawn as paths, so no
fonts), there is no script, and a Content-Security-Policy forbids any fetch, so it opens the
same on an air-gapped repository server as anywhere else. All text from the run (targets,
notes, commands, settings) is escaped. No clock is read: the same run renders the same page.
"""

from __future__ import annotations

import os
import tempfile
from html import escape
from pathlib import Path
from typing import Any, Iterable, Sequence

from rich.text import Text

from backupbench import __version__, units
from backupbench.analysis.compare import first_write_penalty, layout_matrix, slowdowns
from backupbench.analysis.windows import WINDOW_OPERATIONS, backup_windows, effective_speeds, restore_range
from backupbench.report import charts
from backupbench.report.terminal import MONITOR_COLUMNS, layout_cells, table_specs, target_text
from backupbench.monitor import csvlog
from backupbench.results.location import monitor_csv_path, run_folder
from backupbench.results.model import COMPLETE, RunRecord

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
thead th { border-bottom: 2px solid var(--ink); font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; white-space: nowrap; }
td:first-child { white-space: nowrap; }
table.kv td:last-child { overflow-wrap: anywhere; }
tbody tr:nth-child(even) td { background: var(--soft); }
.strong { font-weight: 700; }
.status { font-weight: 600; color: #8a6100; }
.table-note { color: var(--muted); font-size: 12.5px; margin: 2px 0 14px; }
.wide { overflow-x: auto; }
.callout { border-left: 4px solid var(--warn-line); background: var(--warn-bg); padding: 8px 12px; margin: 10px 0; }
.callout.bad { border-color: var(--bad-line); background: var(--bad-bg); }
.callout ul { margin: 4px 0 0; padding-left: 20px; }
.callout li { overflow-wrap: anywhere; }
.headline { font-size: 15px; }
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
  thead th { white-space: normal; }
  pre { font-size: 8pt; }
  svg.chart { max-width: 100%; }
  .wide { overflow: visible; }
}
"""


# ---------------------------------------------------------------------------------------------
# Small builders. Every piece of text goes through _e (html.escape, quotes too).


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _mib(value: float | None) -> str:
    return "-" if not value else f"{value / units.MiB:,.1f}"


def _table(headings: Sequence[str], rows: Iterable[Sequence[str]], *, caption: str = "", numeric_from: int = 1,
           css: str = "") -> str:
    """rows: already-escaped cell HTML. Columns from `numeric_from` on are right-aligned."""
    def num(i: int) -> str:
        return ' class="num"' if i >= numeric_from else ""

    head = "".join(f'<th scope="col"{num(i)}>{_e(h)}</th>' for i, h in enumerate(headings))
    body = []
    for row in rows:
        cells = "".join(f"<td{num(i)}>{cell}</td>" for i, cell in enumerate(row))
        body.append(f"<tr>{cells}</tr>")
    title = f'<p class="table-title">{_e(caption)}</p>' if caption else ""
    cls = f' class="{css}"' if css else ""
    return (f'<div class="wide">{title}<table{cls}><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>\n')


def _cell(value: str | Text) -> str:
    """A terminal column's cell (str or rich Text) as HTML; the terminal's bold stays bold."""
    if isinstance(value, Text):
        text = _e(value.plain)
        return f'<span class="strong">{text}</span>' if "bold" in str(value.style) else text
    return _e(value)


def _section(title: str, body: str, anchor: str = "") -> str:
    ident = f' id="{_e(anchor)}"' if anchor else ""
    return f"<section{ident}>\n<h2>{_e(title)}</h2>\n{body}</section>\n"


def _callout(lines: Sequence[str], title: str, bad: bool = False) -> str:
    items = "".join(f"<li>{_e(line)}</li>" for line in lines)
    return f'<div class="callout{" bad" if bad else ""}"><strong>{_e(title)}</strong><ul>{items}</ul></div>\n'


def _figure(svg: str, caption: str = "") -> str:
    cap = f"<figcaption>{_e(caption)}</figcaption>" if caption else ""
    return f"<figure>\n{svg}{cap}</figure>\n"


def _document(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="backupbench {_e(__version__)}">\n'
        f"<title>{_e(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}"
        f"<footer>Written by backupbench {_e(__version__)} from the stored results. "
        "Self-contained: no scripts, fonts or remote resources.</footer>\n</body>\n</html>\n"
    )


# ---------------------------------------------------------------------------------------------
# One run


def _header(run: RunRecord) -> str:
    facts = [
        ("kind", run.kind),
        ("status", run.status),
        ("started (UTC)", run.started_at.replace("+00:00", "").replace("T", " ")),
        ("finished (UTC)", (run.finished_at or "-").replace("+00:00", "").replace("T", " ")),
        ("host", " ".join(str(run.host.get(k, "")) for k in ("hostname", "kernel") if run.host.get(k))),
        ("target", run.target + (f" ({target_text(run)})" if target_text(run) else "")),
    ]
    buffered = " (BUFFERED: results include the page cache)" if run.settings.get("buffered") else ""
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts if v)
    out = (f"<header>\n<h1>backupbench run {_e(run.run_id)}</h1>\n"
           f'<p class="subtitle">{_e(run.target)}{_e(buffered)}</p>\n<dl class="facts">{dl}</dl>\n</header>\n')
    if run.status != COMPLETE:
        out += _callout([f"run {run.status}" + (f": {run.error}" if run.error else "")],
                        "This run did not complete; its figures may be partial or void.", bad=True)
    return out


def _ops_table(run: RunRecord, ops: list, columns: list, pattern_heading: str, caption: str) -> str:
    if any("members_util" in op.figures for op in ops):
        columns = columns + MONITOR_COLUMNS
    rows = []
    for op in ops:
        if op.status != COMPLETE:
            rows.append([_e(op.name), _e(op.pattern), f'<span class="status">{_e(op.status)}</span>',
                         *[""] * (len(columns) - 1)])
        else:
            rows.append([_e(op.name), _e(op.pattern), *[_cell(cell(op.figures)) for _, cell in columns]])
    title = f"Run {run.run_id} — {run.target}" + (" (BUFFERED)" if run.settings.get("buffered") else "")
    table = _table(["operation", pattern_heading, *[h for h, _ in columns]], rows, caption=title, numeric_from=2)
    return table + (f'<p class="table-note">{_e(caption)}</p>\n' if caption else "")


def operations_html(run: RunRecord) -> str:
    """The terminal's tables: fio operations, small-file phases, S3 phases (same columns)."""
    return "".join(_ops_table(run, *spec) for spec in table_specs(run))


def layouts_html(run: RunRecord) -> str:
    matrix = layout_matrix(run)
    if matrix is None:
        return ""
    rows = []
    for phase in matrix.phases:
        rows.append([_e(phase), *[_e(cell) for cell in layout_cells(matrix, phase)]])
    return _table(["phase", *matrix.layouts], rows,
                  caption="Layouts compared (effective MiB/s or files/s; x = against the first layout)")


def summary_html(run: RunRecord, backup_size: int | None) -> str:
    parts = []
    restore = restore_range(run)
    if restore:
        low, high = sorted((restore.worst_bps, restore.best_bps))
        parts.append(
            f'<p class="headline"><strong>Restore range: {low / units.MiB:,.1f}–{high / units.MiB:,.1f} MiB/s</strong> '
            f"(unfragmented/sequential {_e(units.format_rate(restore.best_bps))}, "
            f"fully fragmented/random {_e(units.format_rate(restore.worst_bps))})</p>\n")
    size = backup_size or run.settings.get("backup_size")
    if size:
        windows = backup_windows(run, size)
        if windows:
            parts.append(_table(["job", "hours"], [[_e(w.label), f"{w.seconds / 3600:,.1f}"] for w in windows],
                                caption=f"Backup windows for {units.format_size(size)}"))
    penalty = first_write_penalty(run)
    if penalty is not None:
        parts.append(f'<p class="headline"><strong>First-write penalty:</strong> overwrite is {penalty:,.2f}x as fast '
                     "as the first write (1.00x = no allocation cost)</p>\n")
    return "".join(parts)


def slowdown_html(run: RunRecord, baseline: RunRecord) -> str:
    rows = []
    for row in slowdowns(run, baseline):
        scale, unit = (units.MiB, " MiB/s") if row.figure == "effective_bw" else (1, " files/s")
        rows.append([_e(row.operation), _e(f"{row.baseline / scale:,.1f}{unit}"), _e(f"{row.current / scale:,.1f}{unit}"),
                     f'<span class="strong">{row.factor:,.2f}x</span>'])
    if not rows:
        return f"<p>No operation of this run has a counterpart in baseline {_e(baseline.run_id)}.</p>\n"
    return (_table(["phase", "baseline", "this run", "slowdown"], rows, caption=f"Against baseline {baseline.run_id}")
            + '<p class="table-note">slowdown = baseline speed / this run\'s speed (2.00x: twice as long)</p>\n')


def notes_html(run: RunRecord) -> str:
    return _callout(run.notes, "Notes and warnings") if run.notes else ""


def _chart(figure, scope: str, label: str, caption: str = "") -> str:
    return "" if figure is None else _figure(charts.inline_svg(figure, scope, label), caption)


def charts_html(run: RunRecord) -> str:
    grouped = layout_matrix(run) is not None
    speed = _chart(charts.speed_figure(run), "speed", "Effective speed" + (" by layout" if grouped else ""),
                   "Effective speed: the rate of backup data each job moves (KB2014 rules: synthetic full "
                   "counts read+write/2, reverse incremental /3)." if run.kind in ("kb2014", "recipe") else "")
    latency = _chart(charts.latency_figure(run), "latency", "p99 latency per operation",
                     "p99 of fio's total latency (submission + completion), per-file or per-request "
                     "latency for small-file and S3 phases.")
    if not (speed or latency):
        return "<p>No completed operation to chart.</p>\n"
    return speed + latency


def timelines_html(run: RunRecord, folder: Path) -> str:
    parts = []
    for index, op in enumerate(run.operations):
        if not op.detail.get("monitor_csv"):
            continue
        path = monitor_csv_path(folder, op)
        if path is None:
            parts.append(f"<p>{_e(op.name)}: monitor CSV {_e(op.detail['monitor_csv'])} not found in the run folder.</p>\n")
            continue
        try:
            series = csvlog.load(path)
        except OSError as exc:
            parts.append(f"<p>{_e(op.name)}: cannot read {_e(path.name)}: {_e(exc.strerror or exc)}</p>\n")
            continue
        devices = charts.phase_devices(run, op, series)
        figure = charts.timeline_figure(f"{op.name}: disks and CPU over time", series, devices)
        if figure is None:
            parts.append(f"<p>{_e(op.name)}: no monitor samples (the phase ended within one interval).</p>\n")
            continue
        relative = path.relative_to(folder.resolve())
        caption = (f"{op.name} ({op.pattern}): read+write MiB/s per member disk, stacked: {', '.join(devices) or 'no device'} "
                   f"(iostat rMB/s + wMB/s) and CPU %iowait, {len(series.elapsed)} samples; raw: {relative}")
        parts.append(_chart(figure, f"timeline-{index}", f"Monitor timeline of {op.name}", caption))
    return "".join(parts)


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        out: list[tuple[str, Any]] = []
        for key in value:
            out += _flatten(value[key], f"{prefix}.{key}" if prefix else str(key))
        return out or [(prefix, "{}")]
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        out = []
        for i, item in enumerate(value):
            out += _flatten(item, f"{prefix}[{i}]")
        return out
    return [(prefix, value)]


SECRET_WORDS = ("secret", "password", "access_key", "token", "credential")


def _value_text(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if any(word in key.lower() for word in SECRET_WORDS) and value not in ("", "-"):
        return "(not shown)"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "[]"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and value >= 1024 and key.rsplit(".", 1)[-1].endswith(("size", "_bytes")):
        return f"{units.format_size(value)} ({value:,} bytes)"
    return str(value)


def _kv_table(pairs: Iterable[tuple[str, Any]], caption: str = "") -> str:
    rows = [[f"<code>{_e(k)}</code>", _e(_value_text(k, v))] for k, v in pairs]
    return _table(["key", "value"], rows, caption=caption, numeric_from=99, css="kv") if rows else ""


HOST_KEYS = ("hostname", "os", "kernel", "machine", "cpus", "memory_bytes", "python", "fio", "s3load")


def host_html(run: RunRecord) -> str:
    host = run.host
    pairs: list[tuple[str, Any]] = []
    for key in [*HOST_KEYS, *sorted(k for k in host if k not in HOST_KEYS)]:
        if key not in host or isinstance(host[key], (dict, list)):
            continue
        pairs.append((key, host[key]))
    parts = [_kv_table(pairs, "Host")]
    for name, target in sorted(host.get("targets", {}).items()):
        parts.append(_kv_table(_flatten(target), f"Target ({name})"))
    stacks = host.get("device_stacks", {})
    if stacks:
        rows = [[_e(name), _e(stack.get("describe", "")), _e(", ".join(stack.get("members", [])))]
                for name, stack in sorted(stacks.items())]
        parts.append(_table(["where", "device stack", "member disks"], rows, caption="Device stacks sampled",
                            numeric_from=99))
    others = {k: v for k, v in host.items() if isinstance(v, (dict, list)) and k not in ("targets", "device_stacks")}
    if others:
        parts.append(_kv_table(_flatten(others), "Other host facts"))
    return "".join(parts)


def settings_html(run: RunRecord) -> str:
    return _kv_table(_flatten(run.settings)) or "<p>No settings stored.</p>\n"


def commands_html(folder: Path) -> str:
    """Every commands.txt of the run (the run folder's, then each layout's), verbatim."""
    if not folder.is_dir():
        return f"<p>The run folder {_e(folder)} is not here; commands and monitor timelines need it.</p>\n"
    files = sorted(folder.rglob("commands.txt"), key=lambda p: (len(p.relative_to(folder).parts), str(p)))
    parts = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
        if not text:
            continue
        where = path.relative_to(folder).parent
        heading = "" if str(where) == "." else f"<h3>{_e(where)}</h3>\n"
        lines = "".join(f'<span class="cmd">{_e(line)}</span>' for line in text.splitlines())
        parts.append(f'{heading}<pre class="commands">{lines}</pre>\n')
    if not parts:
        return "<p>No commands.txt in the run folder.</p>\n"
    return ("<p>Exactly what ran, in order (the job files and raw output sit next to them in "
            f"<code>{_e(folder)}</code>):</p>\n" + "".join(parts))


def render(run: RunRecord, *, results_dir: Path, baseline: RunRecord | None = None,
           backup_size: int | None = None) -> str:
    """The whole page for one run. results_dir: where the run folder (monitor CSVs,
    commands.txt) lives; backup_size (bytes) adds backup windows; baseline adds slowdowns."""
    folder = run_folder(Path(results_dir), run.run_id)
    body = [_header(run)]
    results = operations_html(run) + layouts_html(run) + notes_html(run) + summary_html(run, backup_size)
    body.append(_section("Results", results, "results"))
    body.append(_section("Charts", charts_html(run), "charts"))
    if baseline is not None:
        body.append(_section(f"Slowdown against {baseline.run_id}", slowdown_html(run, baseline), "baseline"))
    timelines = timelines_html(run, folder) if folder.is_dir() else ""
    if timelines:
        body.append(_section("Monitor timelines (1 s samples per phase)", timelines, "monitor"))
    body.append(_section("Host", host_html(run), "host"))
    body.append(_section("Settings", settings_html(run), "settings"))
    body.append(_section("Commands", commands_html(folder), "commands"))
    return _document(f"backupbench run {run.run_id} — {run.target}", "".join(body))


# ---------------------------------------------------------------------------------------------
# Several runs


def _restore_text(restore) -> str:
    if restore is None:
        return "-"
    low, high = sorted((restore.worst_bps, restore.best_bps))
    return f"{_mib(low)}–{_mib(high)}"


def render_comparison(runs: Sequence[RunRecord], *, backup_size: int | None = None) -> str:
    """Effective speed of the same operation across runs: a table (x = against the first run
    that has the operation) and a bar chart; then what each run was."""
    if not runs:
        raise ValueError("render_comparison needs at least one run")
    names, series = charts.comparison_series(runs)
    rows = []
    for row, name in enumerate(names):
        values = [values[row] for _, values in series]
        first = next((i for i, v in enumerate(values) if v), None)
        cells = [_e(name)]
        for index, value in enumerate(values):
            if not value:
                cells.append("-")
                continue
            base = values[first] if first is not None else None
            ratio = f" ({value / base:.2f}x)" if base and index != first else ""
            cells.append(_e(f"{value:,.1f}{ratio}"))
        rows.append(cells)
    ids = [run.run_id for run in runs]
    table = (_table(["operation", *ids], rows, caption="Effective MiB/s (x = against the first run that has it)")
             if rows else "<p>No completed operation with an effective speed in these runs.</p>\n")
    body = [f"<header>\n<h1>backupbench: {len(runs)} runs compared</h1>\n"
            f'<p class="subtitle">{_e(", ".join(ids))}</p>\n</header>\n']
    chart = _chart(charts.comparison_figure(runs), "compare", "Effective speed across runs")
    body.append(_section("Effective speed", table + chart, "speed"))
    if backup_size:
        windows = [{w.operation: w.seconds for w in backup_windows(run, backup_size)} for run in runs]
        window_rows = [[_e(label), *[f"{w[op] / 3600:,.1f}" if op in w else "-" for w in windows]]
                       for op, label in WINDOW_OPERATIONS if any(op in w for w in windows)]
        if window_rows:
            body.append(_section(f"Backup windows for {units.format_size(backup_size)} (hours)",
                                 _table(["job", *ids], window_rows), "windows"))
    facts = []
    for run in runs:
        target = run.target + (f" ({target_text(run)})" if target_text(run) else "")
        restore = restore_range(run)
        facts.append([f"<code>{_e(run.run_id)}</code>", _e(run.started_at.replace("+00:00", "").replace("T", " ")),
                      _e(run.kind), _e(run.status), _e(target), _e(run.host.get("hostname", "")),
                      _e(units.format_size(run.settings.get("file_size") or run.settings.get("size") or 0)
                         if run.settings.get("file_size") or run.settings.get("size") else "-"),
                      _e(_restore_text(restore))])
    body.append(_section("Runs", _table(["run", "started (UTC)", "kind", "status", "target", "host", "test file",
                                         "restore MiB/s"], facts, numeric_from=6), "runs"))
    notes = [f"{run.run_id}: {note}" for run in runs for note in run.notes]
    notes += [f"{run.run_id}: run {run.status}" + (f": {run.error}" if run.error else "")
              for run in runs if run.status != COMPLETE]
    if notes:
        body.append(_section("Notes and warnings", _callout(notes, "From the runs"), "notes"))
    unlike = sorted({run.kind for run in runs})
    if len(unlike) > 1:
        body.insert(1, _callout([f"kinds: {', '.join(unlike)}"], "These runs measured different workloads."))
    speeds = [effective_speeds(run) for run in runs]
    if speeds and not any(speeds):
        body.insert(1, _callout(["none of the runs has a completed operation"], "Nothing to compare."))
    return _document(f"backupbench: {', '.join(ids)} compared", "".join(body))


# ---------------------------------------------------------------------------------------------


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

