"""``report.html``: the run's settings, per-domain score bars (an SVG image), then each sample — named by
its action — with its scores and its real and predicted observations side by side (a line diff where one
can be made), sortable by score and filterable by domain in the page."""

from __future__ import annotations

import difflib
import html
import re
from pathlib import Path
from typing import Any

from lwm.bench.rules import DIMENSIONS
from lwm.bench.samples import BenchSample
from lwm.bench.summary import domain_title, normalize
from lwm.forms import answer_note
from lwm.parsing import remove_marker
from lwm.retrieval import action_text

STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px;vertical-align:top}pre{white-space:pre-wrap;margin:0;
font-size:12px;max-height:400px;overflow:auto}.diff td{font-family:monospace;font-size:12px;border:none}
.diff_add{background:#cfc}.diff_chg{background:#ffc}.diff_sub{background:#fcc}details{margin:1em 0}
summary{cursor:pointer}.score{display:inline-block;min-width:3em;font-weight:700}small{color:#777}
.diff table{table-layout:fixed;width:100%}.diff td.diff_header{width:2.5em}
.diff td{white-space:pre-wrap;overflow-wrap:anywhere}
.pair{table-layout:fixed;width:100%}.pair td{width:50%}.note,.verdict{color:#555;font-size:13px}
.settings th{text-align:left;background:#f4f4f4}.mark{color:#b15900;font-weight:700}"""


def bars_svg(scores: dict[str, Any]) -> str:
    """Grouped horizontal bars: one group per domain, one bar per dimension plus the total, 0-100."""
    keys = (*DIMENSIONS, "total_score")
    colors = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#333333"]
    rows = [(domain_title(d), e) for d, e in scores["domains"].items()]
    bar, gap, left, width = 11, 14, 90, 420
    height = len(rows) * (len(keys) * bar + gap) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 160}" height="{height}" '
             f'font-family="sans-serif" font-size="11">']
    y = 20
    for name, entry in rows:
        parts.append(f'<text x="0" y="{y + len(keys) * bar / 2 + 4}">{html.escape(name)}</text>')
        if entry.get("total_score") is None:
            parts.append(f'<text x="{left}" y="{y + len(keys) * bar / 2 + 4}" fill="#777">no valid samples</text>')
            y += len(keys) * bar + gap
            continue
        for key, color in zip(keys, colors, strict=True):
            value = entry.get(key)
            if value is None:
                parts.append(f'<text x="{left}" y="{y + bar - 3}" fill="#777">-</text>')
                y += bar
                continue
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


def _diff(differ: difflib.HtmlDiff, real: str, predicted: str) -> tuple[str | None, str]:
    """The side-by-side line diff of the two observations as shown, or None and why there is none."""
    a, b = real[:SHOWN_CHARS].splitlines(), predicted[:SHOWN_CHARS].splitlines()
    if any(len(line) > DIFF_LINE_CHARS for line in (*a, *b)):
        return None, f"no line diff: a line is longer than {DIFF_LINE_CHARS:,} characters"
    try:
        table = differ.make_table(a, b, "real", "predicted")
    except RecursionError:
        return None, "no line diff: too deep for difflib"
    # difflib's navigation columns ("n", "t" links to anchors across the page) mean nothing in a report of many
    # samples, and its nowrap cells overflow the page: both go, and the two text columns share the width
    table = _NEXT.sub("", table).replace(' nowrap="nowrap"', "")
    return _COLUMNS.sub(_NUMBERED_HALVES, table, count=1), ""


_NEXT = re.compile(r"<t[dh] class=\"diff_next\"[^>]*>.*?</t[dh]>", re.DOTALL)
_COLUMNS = re.compile(r"(?:<colgroup></colgroup>\s*){6}")
_NUMBERED_HALVES = "<col style='width:3em'><col><col style='width:3em'><col>"


def _label(action: str) -> str:
    """A sample's name in the list: its action on one line, less headings, labels and fences."""
    lines = [line.strip() for line in action.splitlines()
             if line.strip() and not line.startswith(("#", "```")) and not line.strip().endswith(":**")]
    text = " ".join(" ".join(lines).split()) if lines else " ".join(action.split())  # pretty JSON on one line
    return text[:100] + ("…" if len(text) > 100 else "")


def _sample(row: dict[str, Any], sample: BenchSample, differ: difflib.HtmlDiff) -> str:
    real = sample.reference
    predicted = remove_marker(row["extracted_output"]) if "extracted_output" in row else row.get("prediction", "")
    action = action_text(sample.current)  # the action itself, not the prompt's "### Turn k" markup
    total = None if row.get("error_message") or not row.get("total_score") else normalize(row["total_score"])
    verdict = html.escape(row["error_message"]) if row.get("error_message") else " · ".join(
        f"{d} {normalize(row[d]):.0f}" for d in DIMENSIONS if row.get(d))
    diff, why = _diff(differ, real, predicted)
    body = f"<div class='diff'>{diff}</div>" if diff else (
        f"<p class='note'>({why})</p><table class='pair'><tr><th>real</th><th>predicted</th></tr>"
        f"<tr><td><pre>{_shown(real)}</pre></td><td><pre>{_shown(predicted)}</pre></td></tr></table>")
    shown = "failed" if total is None else f"{total:.0f}"
    note = answer_note(row)
    edit = row.get("edit") or {}
    how = (f"answer: {html.escape(str(row.get('finish_reason') or '?'))}"
           + (f" · edit {html.escape(str(edit.get('status')))} ({html.escape(str(edit.get('base')))})" if edit else "")
           + (f" · <span class='mark'>{html.escape(note)}</span>" if note else ""))
    return (f"<details class='sample' data-score='{-1 if total is None else round(total, 2)}' "
            f"data-domain='{html.escape(sample.domain)}'><summary><span class='score'>{shown}</span> "
            + ("<span class='mark' title='cut, fell back or repaired: see the sample'>⚑</span> " if note else "")
            + f"{html.escape(_label(action))} <small>{domain_title(sample.domain)} · "
            f"{html.escape(row['id'])}</small></summary><p class='verdict'>{verdict}</p><p class='note'>{how}</p>"
            f"<p><b>Action</b></p><pre>{html.escape(action)}</pre>{body}</details>")


def _answers(rows: list[dict[str, Any]]) -> str:
    """How the answers ended, counted: finish reasons, edits applied or fallen back, repairs (``lwm.forms``)."""
    counts: dict[str, int] = {}
    for row in rows:
        keys = [f"finish {row.get('finish_reason')}"] if row.get("finish_reason") else []
        if row.get("edit"):
            keys.append(f"edit {row['edit'].get('status')}")
            if row["edit"].get("unrelated"):  # another session's page or screen, copied through @edit example N
                keys.append("edit of an unrelated example")
        keys += [f"{name} {value if isinstance(value, str) else 'cut'}"
                 for name, value in (row.get("form") or {}).items()]
        for key in keys:
            counts[key] = counts.get(key, 0) + 1
    if not counts:
        return ""
    cells = "".join(f"<tr><td>{html.escape(k)}</td><td>{n}</td></tr>" for k, n in sorted(counts.items()))
    return ("<h2>How the answers ended</h2><p class='note'>Finish reasons, edits (applied, or malformed and fallen "
            "back) and repairs of ill-formed answers (a stopped loop, a JSON retry, HTML, an empty answer); a "
            f"sample so marked has ⚑.</p><table><tr><th>what</th><th>answers</th></tr>{cells}</table>")


def _value(value: Any) -> str:
    """A setting as a person reads it: ``terminal 256, web 512`` for a dict, a list comma-separated."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {_value(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_value(v) for v in value)
    return str(value)


def _settings(run: dict[str, Any]) -> str:
    """Every setting the run recorded (model, sampling — a temperature or seed of 0 too —, data, protocol,
    judge, lwm's version, start and end times), shown before any number."""
    rows = [("data", run.get("data"))]
    for stage, recorded in run.items():
        if isinstance(recorded, dict):
            rows += [(f"{stage} {key}", value) for key, value in recorded.items()]
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(_value(v))}</td></tr>" for k, v in rows
                    if v is not None)
    return f"<table class='settings'>{cells}</table>" if cells else ""


def _skill(scores: dict[str, Any]) -> str:
    """Skill over each floor per domain: the model's score minus copy-last's (the previous observation) and
    copy-retrieved's (the nearest retrieved real transition's), on the samples each floor answered."""
    from lwm.bench.summary import FLOORS

    fmt = lambda k, v: "-" if v is None else f"{v:+.2f}" if k == "skill" else f"{v:.2f}" if isinstance(v, float) \
        else str(v)  # noqa: E731
    parts = []
    for floor, said in FLOORS.items():
        skill = scores.get(f"skill_over_{floor}") or {}
        if not skill.get("domains"):
            continue
        name = floor.replace("_", "-")
        entries = {**skill["domains"], "overall": skill.get("overall") or {}}
        rows = "".join(f"<tr><td>{domain_title(d)}</td>" + "".join(f"<td>{fmt(k, e.get(k))}</td>" for k in (
            "samples", "model", floor, "skill")) + "</tr>" for d, e in entries.items() if e)
        parts.append(f"<h2>Skill over {name}</h2><p class='note'>{html.escape(said.split(' (', 1)[1].rstrip(')'))}"
                     f"</p><table><tr><th>domain</th><th>samples</th><th>model</th><th>{name}</th><th>skill</th></tr>"
                     f"{rows}</table>")
    return "".join(parts)


CONTROLS = """<p id='controls'>Sort <select id='sort'><option value='data'>in data order</option>
<option value='asc'>lowest score first</option><option value='desc'>highest score first</option></select>
domain <select id='domain'><option value=''>all</option>{domains}</select>
score at most <input id='max' type='number' min='0' max='100' value='100'> <span id='count'></span></p>"""
SCRIPT = """<script>const list=document.getElementById('samples'),all=[...list.children];
function show(){const how=sort.value,d=domain.value,m=+max.value;let items=[...all];
if(how!=='data')items.sort((a,b)=>(how==='asc'?1:-1)*(a.dataset.score-b.dataset.score));
let n=0;for(const e of items){const on=(!d||e.dataset.domain===d)&&+e.dataset.score<=m;e.hidden=!on;n+=on;
list.appendChild(e)}count.textContent=n+' of '+all.length+' shown'}
for(const id of ['sort','domain','max'])document.getElementById(id).addEventListener('input',show);show()</script>"""


def write_report(path: Path, scores: dict[str, Any], rows: list[dict[str, Any]], samples: dict[str, BenchSample],
                 title: str = "lwm benchmark report", limit: int = 300) -> Path:
    """One page: the run's settings, the score table and bars (0-100), then the samples, each labelled by
    its action with its scores and the real and predicted observations side by side, sortable by score
    and filterable by domain."""
    differ = difflib.HtmlDiff(wrapcolumn=70)
    fmt = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
    head = "".join(f"<th>{h}</th>" for h in ("domain", "valid", "failed", *DIMENSIONS, "total"))
    body = "".join(
        f"<tr><td>{domain_title(d)}</td><td>{e['valid']}</td><td>{e['failed']}</td>"
        + "".join(f"<td>{fmt(e[k])}</td>" for k in (*DIMENSIONS, "total_score")) + "</tr>"
        for d, e in scores["domains"].items())
    shown = [(row, samples[row["id"]]) for row in rows if row["id"] in samples][:limit]
    items = "".join(_sample(row, sample, differ) for row, sample in shown)
    domains = "".join(f"<option value='{html.escape(d)}'>{domain_title(d)}</option>"
                      for d in sorted({sample.domain for _, sample in shown}))
    more = f" (the first {limit} of {len(rows)})" if len(rows) > limit else ""
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
            f"{_settings(scores.get('run') or {})}"
            f"<p>Overall: <b>{fmt(scores['overall'])}</b> over {scores['valid']} valid samples "
            f"({scores['failed']} failed). Every score here is on one scale, 0-100: (mean - 1) / 4 x 100.</p>"
            f"<table><tr>{head}</tr>{body}</table>{_skill(scores)}{_answers(rows)}"
            f"<h2>Per domain</h2>{bars_svg(scores)}"
            f"<h2>Samples{more}</h2>{CONTROLS.format(domains=domains)}<div id='samples'>{items}</div>"
            f"{SCRIPT}</body></html>")
    path.write_text(page, encoding="utf-8")
    return path
