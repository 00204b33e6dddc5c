"""Well-formed answers: what a world model's answer must look like before anyone sees it, and the repairs.

A small model fails in a few recognisable ways, and each is caught here, repaired where the repair is certain,
and counted (``Form``, which goes into the observation's metadata as ``form``):
- it **loops**: one line or a few again and again until the token cap. ``repeating_tail`` finds a sequence
  (text or token ids) whose end repeats one unit; the embedded backend stops generating there, and
  ``trim_loop`` keeps what came before the loop and the unit once.
- it copies the **truncation mark** of a retrieved example (``[...]`` on a line of its own, which lwm writes
  when it cuts an example and no real environment prints).
- it answers **HTML** (``<pre><code class=...>``) where the environment's observations are text or JSON: a
  resample is asked for, and if that is HTML too, the markup is removed (``html_text``).
- it answers **something other than JSON where the result is JSON** (``expects_json``: the tool's earlier
  result in the session, every retrieved result of the same tool, its ``outputSchema``, or, for a tool not
  called yet, every other result of the session; a ``None``, an empty result or an error says nothing either
  way): the model is asked again with JSON-constrained decoding (a grammar in llama.cpp, ``response_format``
  on OpenAI servers). A path or markup where the result is JSON is caught by the same rule.
- it **echoes the action** (``echoes``: the call itself, or its arguments, written back as the result): a
  resample, then JSON-constrained decoding where the result is JSON.
- an edit of a retrieved example **pastes another session's page** (``unrelated``): a resample, then the
  question asked without retrieved examples.
- the answer is **empty** (nothing in the answer block, or an edit with nothing to edit): see
  ``lwm.edits.apply_answer``'s fallbacks, then a resample.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

CUT = ("length", "loop")
"""Finish reasons of an answer stopped before its end: the token cap, or a loop the backend stopped."""
LOOP_MIN_SPAN = 48
"""Tokens (or characters, for text) a repetition must cover, beyond its first unit, to count as a loop."""
LOOP_MIN_REPEATS = 3
"""Copies of the unit after the first that make a loop (so four in all)."""
LOOP_MAX_PERIOD = 200
TRUNCATION_MARK = re.compile(r"\n?^\[\.\.\.\][ \t]*$", re.MULTILINE)
_HTML = re.compile(r"^\s*(?:```html\s*)?<(?:(?:pre|code|html|div|p|span|body|table|ul|ol|h[1-6]|!doctype)\b|!--)",
                   re.IGNORECASE)


@dataclass
class Form:
    """What was done to an answer's text to make it well-formed (the repairs that ask the model again are added
    by ``WorldModel``: ``json``, ``html``, ``empty``)."""

    loop: dict[str, int] | None = None
    """The loop that was cut: ``{"period": chars of the unit, "cut": chars removed}``."""
    truncation_mark: bool = False

    def metadata(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.loop:
            out["loop"] = self.loop
        if self.truncation_mark:
            out["truncation_mark"] = True
        return out


def repeating_tail(seq: Sequence[Any], min_span: int = LOOP_MIN_SPAN, min_repeats: int = LOOP_MIN_REPEATS,
                   max_period: int = LOOP_MAX_PERIOD) -> tuple[int, int] | None:
    """``(start, period)`` when ``seq`` ends in one unit of ``period`` items repeated: the repeated part after
    the first unit covers at least ``min_span`` items and ``min_repeats`` units, and ``start`` is where the
    first unit begins (the loop is everything from ``start + period`` on). None when its end does not repeat."""
    n = len(seq)
    for period in range(1, min(max_period, n // (min_repeats + 1)) + 1):
        span = max(min_span, min_repeats * period)
        if span + period > n or seq[n - span:] != seq[n - span - period:n - period]:
            continue
        start = n - span - period  # walk back while the period holds, to the first unit
        while start > 0 and seq[start - 1] == seq[start - 1 + period]:
            start -= 1
        return start, period
    return None


def trim_loop(text: str) -> tuple[str, dict[str, int] | None]:
    """``text`` with a looping end cut after the loop's first unit (and a partial unit after it), and what was cut."""
    # the last unit may be cut mid-way by the token cap: look for the loop in the text up to the end of its
    # last whole line first, then as it is
    candidates = [text]
    if "\n" in text.rstrip("\n"):
        candidates.insert(0, text[:text.rstrip("\n").rfind("\n") + 1])
    for candidate in candidates:
        found = repeating_tail(candidate)
        if found is not None:
            start, period = found
            kept = text[:start + period].rstrip()
            return kept, {"period": period, "cut": len(text) - len(kept)}
    return text, None


def strip_truncation_mark(text: str) -> tuple[str, bool]:
    """``text`` without lines that are only ``[...]`` (lwm's mark for a cut example)."""
    stripped = TRUNCATION_MARK.sub("", text)
    return (stripped.rstrip() if stripped != text else text), stripped != text


def is_html(text: str) -> bool:
    return _HTML.match(text) is not None


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def html_text(text: str) -> str:
    """The text of an HTML fragment, markup removed (code fences around it too)."""
    body = re.sub(r"^\s*```html\s*|\s*```\s*$", "", text)
    parser = _Text()
    parser.feed(body)
    parser.close()
    return html.unescape("".join(parser.parts)).strip()


def is_json(text: str) -> bool:
    text = text.strip()
    if not text or text[0] not in "{[\"" and not text[0].isdigit() and text not in ("null", "true", "false"):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def wants_html(observations: Sequence[str], html_pages: bool = False) -> bool:
    """Whether an HTML answer is in form: some of the observations the session showed (or the examples retrieved
    for it) are HTML; in a domain whose pages may be HTML (``Domain.html_pages``), also while there are none to
    go by. A web session of accessibility trees is not answered with markup (lwm-mini wrote
    ``<pre><code ...>`` on unseen sites, where copying the last page scored far higher)."""
    seen = [o for o in observations if o.strip()]
    return any(is_html(o) for o in seen) or (html_pages and not seen)


NOTHING = frozenset(("", "none", "null", "[]", "{}", '""'))
"""Results that say nothing of a tool's form: a tool with nothing to return answers ``None``, ``null`` or nothing."""


def telling(results: Sequence[str]) -> list[str]:
    """The results that show a tool's form: not empty, not a bare ``None``/``null``, not an error."""
    return [r for r in results if r.strip().lower() not in NOTHING and not is_error(r)]


def expects_json(tool_results: Sequence[str], examples: Sequence[str], output_schema: bool,
                 session_results: Sequence[str] = ()) -> bool:
    """Whether a tool call's result is JSON, by the nearest evidence that tells (``telling``: a ``None``, an empty
    result or an error does not): the tool's latest result in this session, else every retrieved result of the
    same tool, else its declared output schema, else (a tool never seen) every result of the session's other
    tools, where there are at least two. Evidence before the schema: a server may declare one and still render
    text (the filesystem server declares ``{"content": string}`` and answers ``Allowed directories: ...``)."""
    own, shown, others = telling(tool_results), telling(examples), telling(session_results)
    if own:
        return is_json(own[-1])
    if shown:
        return all(is_json(e) for e in shown)
    if output_schema:
        return True
    return len(others) >= 2 and all(is_json(r) for r in others)


def echoes(answer: str, action: str) -> bool:
    """Whether an answer is the action written back: the same call (JSON equal to it), its arguments object, or
    the action's own text. A tool may return one of its arguments (``textwrap.dedent``): that is not an echo;
    the whole set of arguments as the result is."""
    text, call = answer.strip(), action.strip()
    if not text:
        return False
    if text == call:
        return True
    try:
        given, sent = json.loads(text), json.loads(call)
    except ValueError:
        return False
    if given == sent:
        return True
    arguments = sent.get("arguments") if isinstance(sent, dict) else None
    return isinstance(arguments, dict) and len(arguments) > 0 and given == arguments


_ERROR = re.compile(r"^\s*(?:MCP error|Error\b|Traceback)", re.IGNORECASE)


def is_error(text: str) -> bool:
    """An answer that is an error result (``Error: ...``, ``MCP error -32602: ...``): text for any tool, JSON
    results or not, so it is never forced into JSON."""
    return bool(_ERROR.match(text))


def unrelated(answer: str, own: str, least: float = 0.2) -> bool:
    """Whether an answer shares almost nothing with the session's own latest observation (under ``least`` of its
    words): an edit on a retrieved example that brought another session's page instead of this one's."""
    words = set(re.findall(r"\w+", answer.lower()))
    return bool(words) and len(words & set(re.findall(r"\w+", own.lower()))) / len(words) < least


def pasted(observation: Any, own: str) -> bool:
    """Whether an answer is an edit of a retrieved example (``@edit example N``) that brought another session's
    page or screen: it shares almost nothing with the session's own latest observation ``own``."""
    base = str((observation.metadata.get("edit") or {}).get("base") or "")
    return base.startswith("example") and bool(own.strip()) and unrelated(observation.content, own)


EMPTY = {"resampled": "its answer was empty; sampled again",
         "previous": "its answer was empty, and so was a second; the previous observation was kept",
         "initial": "its answer was empty, and so was a second; the initial observation was kept",
         "example": "its answer was empty, and so was a second; the retrieved example's observation was copied",
         "unguided": "its answer was empty; asked again without lwm's guidance (no edits, no examples)",
         "none": "it answered nothing, even when asked again"}
"""What each outcome of the empty-answer repair (``form["empty"]``) means, in words."""


UNRELATED = {"resampled": "sampled again", "unguided": "asked again without retrieved examples",
             "kept": "kept, as asking again gave no better"}
ECHO = {"resampled": "sampled again", "json": "asked again for JSON", "kept": "kept, as asking again echoed too"}


def answer_note(metadata: dict[str, Any], content: str | None = None) -> str:
    """One line on what happened to an answer beyond the ordinary (cut, fell back, repaired); "" when nothing.
    With ``content``, the note ends with the observation's length, so a cut is read against what is left."""
    said = []
    if metadata.get("finish_reason") == "length":
        said.append("the answer hit the token cap (--max-tokens)")
    form = metadata.get("form") or {}
    if "loop" in form:
        said.append(f"the answer repeated itself; cut after its first repeat ({form['loop']['cut']} characters "
                    "removed)")
    edit = metadata.get("edit") or {}
    if edit.get("status") == "malformed":
        said.append(f"its edit could not be applied ({edit.get('error')}); fell back")
    if "unrelated" in form or edit.get("unrelated"):
        said.append(f"it edited retrieved {edit.get('base') or 'example'}, another session's observation that shares "
                    "almost nothing with this session's; " + UNRELATED.get(form.get("unrelated", "kept"), ""))
    if "echo" in form:
        said.append("it wrote the action back as the result; " + ECHO.get(form["echo"], form["echo"]))
    if "json" in form:
        said.append("not JSON where the tool's results are; asked again for JSON"
                    + ("" if form["json"] == "constrained" else ", and that was not JSON either"))
    if "html" in form:
        said.append("it answered HTML where the session has none; "
                    + ("sampled again" if form["html"] == "resampled" else "the markup was removed"))
    if "empty" in form:
        said.append(EMPTY.get(form["empty"], f"its answer was empty ({form['empty']})"))
    if form.get("truncation_mark"):
        said.append("removed a copied '[...]' line")
    if said and content is not None:
        said.append(f"the observation is {len(content):,} characters")
    return "; ".join(said)
