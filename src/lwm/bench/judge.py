"""The LLM judge: messages in the published layout, and a tolerant parser of its verdict."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from lwm.backends import Backend, BackendError, GenerateConfig, Message
from lwm.bench.data import BenchSample
from lwm.bench.rules import DIMENSIONS
from lwm.domains import domain_names
from lwm.parsing import extract_tag, split_reasoning
from lwm.prompts import PromptSet

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
    history = "".join(f"{p}\n{r}\n\n" for p, r in zip(sample.prompt[: sample.index], sample.response[: sample.index],
                                                       strict=False))
    context = f"# Context (Historical Interactions):\n\n{history}" if history else ""
    current = sample.current_prompt or sample.prompt[sample.index]
    user = JUDGE_USER.format(context=context, current=current, predicted=prediction, reference=sample.reference)
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


async def llm_verdict(sample: BenchSample, prediction: str, backend: Backend, prompts_dir: str | Path | None,
                       retries: int) -> dict[str, Any]:
    """The judge's scores for one prediction, retried on failed calls and unparsable answers."""
    system = PromptSet(sample.domain if sample.domain in domain_names() else "mcp", prompts_dir).judge()
    messages = judge_messages(sample, prediction, system)
    reason = ""
    for attempt in range(retries):
        try:
            gen = await backend.generate(messages, GenerateConfig(temperature=0.6, seed=attempt, max_tokens=4096))
            verdict = parse_verdict(gen.text)
        except BackendError as exc:
            reason = f"judge call failed: {exc}"
            continue
        except ValueError as exc:
            reason = f"judge answer not parsed: {exc}"
            continue
        return {**verdict["scores"], "total_score": verdict["total_score"], "strengths": verdict["strengths"],
                "weaknesses": verdict["weaknesses"], "failed": 0.0, "judge": backend.name,
                "judge_raw_output": gen.text}
    return {"failed": 1.0, "error_message": f"{reason} (after {retries} attempts)", "judge": backend.name}
