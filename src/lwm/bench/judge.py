"""The LLM judge's request and the parser of its answer (``scorer.LLMJudge`` asks; this lays out and reads)."""

from __future__ import annotations

import json
import re
from typing import Any

from lwm.backends import Message
from lwm.bench.data import BenchSample
from lwm.bench.rules import DIMENSIONS
from lwm.parsing import extract_tag, split_reasoning

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
    history = "".join(f"{p}\n{r}\n\n" for p, r in sample.history)
    context = f"# Context (Historical Interactions):\n\n{history}" if history else ""
    user = JUDGE_USER.format(context=context, current=sample.current, predicted=prediction, reference=sample.reference)
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": user.strip()}]


def _score(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    else:
        match = re.match(r"\s*(\d+(?:\.\d+)?)\s*(?:/\s*5)?", str(value))
        if not match:
            return None
        number = float(match.group(1))
    return int(round(number)) if 1 <= number <= 5 else None


def _loads_lenient(text: str) -> Any:
    text = re.sub(r"^\s*```(?:json)?\s*|\s*```\s*$", "", text.strip())
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise ValueError("no JSON object")
    body = re.sub(r",\s*([}\]])", r"\1", text[start: end + 1])  # trailing commas
    body = re.sub(r'(:\s*)(\d(?:\.\d+)?\s*/\s*5)(\s*[,}])', r'\1"\2"\3', body)  # bare 4/5
    return json.loads(body)


def parse_verdict(raw: str) -> dict[str, Any]:
    """``{"scores": {...}, "total_score", "strengths", "weaknesses"}``; raises ValueError saying why not."""
    rest, _ = split_reasoning(raw or "", "final_evaluation")
    block = extract_tag(rest, "final_evaluation")
    data = _loads_lenient(block if block is not None else rest)
    if not isinstance(data, dict):
        raise ValueError("verdict is not a JSON object")
    raw_scores = data.get("scores", data)
    if not isinstance(raw_scores, dict):
        raise ValueError("'scores' is not an object")
    lowered = {str(k).strip().lower(): v for k, v in raw_scores.items()}
    scores = {}
    for dim in DIMENSIONS:
        value = _score(lowered.get(dim))
        if value is None:
            raise ValueError(f"missing or invalid score for {dim}: {lowered.get(dim)!r}")
        scores[dim] = value
    return {"scores": scores, "total_score": sum(scores.values()) / len(scores),
            "strengths": data.get("strengths", []), "weaknesses": data.get("weaknesses", [])}
