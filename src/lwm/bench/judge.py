"""The LLM judge's request (lwm's own layout) and the parser of its verdict.

The verdict semantics are AgentWorldBench's, so that one judge answer gives the same scores in either
tool: the JSON is looked for in the last ``<final_evaluation>`` block (else the whole answer, reasoning
removed), first in a fenced block, then among balanced objects (the last one naming ``scores``), then
from the last closing brace back; trailing commas and bare or single-quoted keys are repaired. Each
dimension is read by its exact name; a number is rounded, ``"4/5"`` read as 4, a score above 5 clamped
to 5; a missing or zero dimension is left out of the sample's mean (and of the aggregate), not a failure.
The request layout with ``--protocol`` is the published one, read from the user's checkout (``protocol.py``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from lwm.backends import Message
from lwm.bench.rules import DIMENSIONS
from lwm.bench.samples import BenchSample
from lwm.parsing import extract_tag, split_reasoning

VERDICT_TAG = "final_evaluation"
JUDGE_USER = """{context}

# Current Turn:

{current}

**World Model Output (Simulated):**
```
{predicted}
```

**Ground Truth (Real Output):**
```
{reference}
```

Evaluate the simulated output against the ground truth on the five dimensions (format, factuality,
consistency, realism, quality), each an integer from 1 to 5, and answer in <final_evaluation> as instructed."""


def judge_messages(sample: BenchSample, prediction: str, system_prompt: str) -> list[Message]:
    """lwm's own judge request (used without ``--protocol``; its numbers are not the published protocol's)."""
    history = "".join(f"{p}\n{r}\n\n" for p, r in sample.history)
    context = f"# Context (Historical Interactions):\n\n{history}" if history else ""
    user = JUDGE_USER.format(context=context, current=sample.current, predicted=prediction, reference=sample.reference)
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": user.strip()}]


# --- finding the JSON ---------------------------------------------------------------------------------
_FENCE = re.compile(r"```(?:json)?\s*([\s\S]*?)\s*```")


def _fenced(text: str) -> str | None:
    blocks = [m.group(1).strip() for m in _FENCE.finditer(text)]
    objects = [b for b in blocks if b.startswith("{") and b.endswith("}")]
    return next((b for b in reversed(objects) if '"scores"' in b), objects[-1] if objects else None)


def _balanced_from(text: str, start: int) -> str | None:
    """The object opening at ``start``, to its matching brace (braces in strings ignored)."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        c = text[i]
        if escaped:
            escaped = False
        elif in_string:
            escaped, in_string = c == "\\", c != '"'
        elif c == '"':
            in_string = True
        elif c in "{}":
            depth += 1 if c == "{" else -1
            if depth == 0:
                return text[start: i + 1]
    return None


def _objects(text: str) -> str | None:
    found, pos = [], text.find("{")
    while pos >= 0:
        obj = _balanced_from(text, pos)
        if obj:
            found.append(obj)
        pos = text.find("{", pos + (len(obj) if obj else 1))
    return next((o for o in reversed(found) if '"scores"' in o), found[-1] if found else None)


def _last_object(text: str) -> str | None:
    """From the last ``}`` back to its opening brace (a quote not after a backslash toggles a string)."""
    end = text.rfind("}")
    depth, in_string = 0, False
    for i in range(end, -1, -1):
        c = text[i]
        if c == '"' and (i == 0 or text[i - 1] != "\\"):
            in_string = not in_string
        elif not in_string and c in "{}":
            depth += 1 if c == "}" else -1
            if depth == 0:
                return text[i: end + 1]
    return None


def _repaired(body: str) -> str:
    body = re.sub(r",(\s*[}\]])", r"\1", body)
    body = re.sub(r"'(\w+)'(\s*:)", r'"\1"\2', body)
    return re.sub(r"([{,])\s*(\w+)\s*:", r'\1"\2":', body)


def _decode(body: str) -> Any:
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        problem = exc
    scores = re.search(r'"scores"\s*:\s*\{[^}]+\}', body)  # last resort: the scores object alone
    try:
        if scores:
            return json.loads("{" + scores.group(0) + "}")
    except json.JSONDecodeError:
        pass
    raise ValueError(f"verdict is not valid JSON: {problem}")


def _score(value: Any) -> int:
    """A dimension's integer score; 0 for absent or unreadable (left out of the mean)."""
    if isinstance(value, float):
        number = int(round(value))
    elif isinstance(value, int):
        number = int(value)
    elif isinstance(value, str):
        try:
            number = int(value.split("/")[0].strip())
        except ValueError:
            number = 0
    else:
        number = 0
    return max(1, min(5, number)) if number > 0 else number


def parse_verdict(raw: str, tag: str = VERDICT_TAG) -> dict[str, Any]:
    """``{"scores": {dim: int}, "total_score", "strengths", "weaknesses"}``; raises ValueError saying why not.
    A dimension scored 0 or missing is absent from ``scores``; ``total_score`` is the mean of the others
    (None when there are none, which the aggregate leaves out as the published one does)."""
    text = (raw or "").strip()
    if not text:
        raise ValueError("empty judge answer")
    rest, _ = split_reasoning(text, tag)
    rest = rest.strip()
    block = extract_tag(rest, tag)
    target = block.strip() if block and block.strip() else rest
    found = _fenced(target) or _objects(target) or _last_object(target)
    if not found:
        raise ValueError("no JSON object in the verdict")
    data = _decode(_repaired(found))
    if not isinstance(data, dict) or not isinstance(data.get("scores"), dict):
        raise ValueError("the verdict has no 'scores' object")
    scores = {dim: s for dim in DIMENSIONS if (s := _score(data["scores"].get(dim, 0))) != 0}
    positive = [s for s in scores.values() if s > 0]
    return {"scores": scores, "total_score": sum(positive) / len(positive) if positive else None,
            "strengths": _listed(data.get("strengths")), "weaknesses": _listed(data.get("weaknesses"))}


def _listed(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(x) for x in value]
    return [value] if isinstance(value, str) and value else []
