"""``report.html``: per-domain score bars (an SVG image), then each sample's real and predicted
observation side by side with a line diff and its scores."""

from __future__ import annotations

import difflib
import html
from pathlib import Path
from typing import Any

from lwm.bench.data import BenchSample
from lwm.bench.rules import DIMENSIONS
from lwm.bench.score import DISPLAY

STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px;vertical-align:top}pre{white-space:pre-wrap;margin:0;
font-size:12px;max-height:400px;overflow:auto}.diff td{font-family:monospace;font-size:12px;border:none}
.diff_add{background:#cfc}.diff_chg{background:#ffc}.diff_sub{background:#fcc}details{margin:1em 0}
summary{cursor:pointer;font-weight:600}"""


def bars_svg(scores: dict[str, Any]) -> str:
    """Grouped horizontal bars: one group per domain, one bar per dimension plus the total, 0-100."""
    keys = (*DIMENSIONS, "total_score")
    colors = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#333333"]
    rows = [(DISPLAY.get(d, d), e) for d, e in scores["domains"].items()]
    bar, gap, left, width = 11, 14, 90, 420
    height = len(rows) * (len(keys) * bar + gap) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 160}" height="{height}" '
             f'font-family="sans-serif" font-size="11">']
    y = 20
    for name, entry in rows:
        parts.append(f'<text x="0" y="{y + len(keys) * bar / 2 + 4}">{html.escape(name)}</text>')
        for key, color in zip(keys, colors, strict=True):
            value = entry.get(key) or 0.0
            w = max(0.0, min(100.0, value)) / 100 * width
            parts.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar - 2}" fill="{color}"/>'
                         f'<text x="{left + w + 4:.1f}" y="{y + bar - 3}">{value:.1f}</text>')
            y += bar
        y += gap
    for i, (key, color) in enumerate(zip(keys, colors, strict=True)):
        parts.append(f'<rect x="{left + width + 60}" y="{20 + i * 16}" width="10" height="10" fill="{color}"/>'
                     f'<text x="{left + width + 75}" y="{29 + i * 16}">{key.replace("_score", "")}</text>')
    parts.append("</svg>")
    return "".join(parts)


SHOWN_CHARS = 20_000
"""Most characters of one observation in the report (a 10 MB observation made a 62 MB page)."""
DIFF_LINE_CHARS = 2_000
"""difflib's line diff recurses on long lines (a 100,000-character line crashed the report)."""


def _shown(text: str) -> str:
    if len(text) <= SHOWN_CHARS:
        return html.escape(text)
    return f"{html.escape(text[:SHOWN_CHARS])}\n… ({len(text) - SHOWN_CHARS:,} more characters not shown)"


def _diff(differ: difflib.HtmlDiff, real: str, predicted: str) -> str:
    """The line diff of the two observations as shown, or a note saying why there is none."""
    a, b = real[:SHOWN_CHARS].splitlines(), predicted[:SHOWN_CHARS].splitlines()
    if any(len(line) > DIFF_LINE_CHARS for line in (*a, *b)):
        return f"<p>(no line diff: a line is longer than {DIFF_LINE_CHARS:,} characters)</p>"
    try:
        return differ.make_table(a, b, "real", "predicted")
    except RecursionError:
        return "<p>(no line diff: too deep for difflib)</p>"


def _settings(run: dict[str, Any]) -> str:
    """The run's recorded settings (model, sampling, data, judge, times), shown before any number."""
    rows = [("data", run.get("data"))]
    for stage in ("infer", "judge"):
        for key, value in (run.get(stage) or {}).items():
            if value is not None:
                rows.append((f"{stage} {key}", value))
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in rows if v)
    return f"<table class='settings'>{cells}</table>" if cells else ""


def write_report(path: Path, scores: dict[str, Any], rows: list[dict[str, Any]], samples: dict[str, BenchSample],
                 title: str = "lwm benchmark report", limit: int = 300) -> Path:
    differ = difflib.HtmlDiff(wrapcolumn=80)
    head = "".join(f"<th>{h}</th>" for h in ("domain", "valid", "failed", *DIMENSIONS, "total"))
    body = "".join(
        f"<tr><td>{DISPLAY.get(d, d)}</td><td>{e['valid']}</td><td>{e['failed']}</td>"
        + "".join(f"<td>{'-' if e[k] is None else f'{e[k]:.2f}'}</td>" for k in (*DIMENSIONS, "total_score")) + "</tr>"
        for d, e in scores["domains"].items())
    overall = "-" if scores["overall"] is None else f"{scores['overall']:.2f}"
    items = []
    for row in rows[:limit]:
        sample = samples.get(row["id"])
        if sample is None:
            continue
        real, predicted = sample.reference, row.get("prediction", "")
        verdict = row.get("error_message") or " ".join(f"{d} {row[d]:.1f}" for d in DIMENSIONS if d in row)
        items.append(
            f"<details><summary>{html.escape(row['id'])} · {DISPLAY.get(sample.domain, sample.domain)} · "
            f"{html.escape(verdict)}</summary>"
            f"<p><b>Action</b></p><pre>{html.escape(sample.current_prompt or sample.prompt[sample.index])}</pre>"
            f"<table><tr><th>real</th><th>predicted</th></tr><tr><td><pre>{_shown(real)}</pre></td>"
            f"<td><pre>{_shown(predicted)}</pre></td></tr></table>"
            f"<div class='diff'>{_diff(differ, real, predicted)}</div>"
            "</details>")
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
            f"{_settings(scores.get('run') or {})}"
            f"<p>Overall: <b>{overall}</b> over {scores['valid']} valid samples ({scores['failed']} failed). "
            "Scores are (mean - 1) / 4 x 100.</p>"
            f"<table><tr>{head}</tr>{body}</table><h2>Per domain</h2>{bars_svg(scores)}"
            f"<h2>Samples</h2>{''.join(items)}</body></html>")
    path.write_text(page, encoding="utf-8")
    return path
