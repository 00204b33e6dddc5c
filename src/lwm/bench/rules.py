"""Judge-free rule scores on the same five dimensions as the LLM judge (1-5 each), plus exact match.

Each dimension is a number x in [0, 1] mapped to 1 + 4x, so the published normalisation
((mean - 1) / 4 * 100) turns it back into a percentage. Volatile values (timestamps, dates, UUIDs,
hashes, long numbers such as PIDs and sizes) are masked before comparing. The formulas:

- format: JSON references: 0.5 x (prediction is valid JSON) + 0.5 x Jaccard of the key paths.
  Other text: 0.5 x Jaccard of the line-shape multisets (indentation, leading marker, tree/prompt
  pattern) + 0.5 x line-count ratio (min/max).
- factuality: F1 of masked content tokens (words and numbers) between prediction and reference. With
  the previous real observation P given, the change is scored, not the overlap: if a share w of the
  reference's tokens is new (not in P), factuality = (1 - w) x F1(prediction, reference) + w x F1(the
  prediction's tokens not in P, the reference's tokens not in P). Copying P earns nothing of the w part.
- consistency: of the entities (paths, file names, ids, quoted strings) that the history established
  and the reference repeats, the share the prediction repeats too; factuality when there are none.
- realism: 0.6 x (prediction and reference agree on error vs success, judged on their first 4,000
  characters) + 0.4 x length ratio (min/max).
- quality: recall of the reference's non-empty masked lines among the prediction's lines; with P given,
  (1 - w) x that + w x the recall of the reference's new lines (not in P), w being their share.
- exact: 1 when masked, whitespace-normalised texts are equal, else 0 (reported, not averaged).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from lwm.volatile import mask

DIMENSIONS = ("format", "factuality", "consistency", "realism", "quality")
CHANGE_WEIGHT = 0.5
"""Where the observation changed at all, at least this share of factuality and quality is the change's: a
screen that grows by one line (a terminal) still changed, and repeating the rest of it is not the skill."""
_ERROR = re.compile(r"error|traceback|exception|not found|no such|denied|invalid|failed|cannot|can't|unknown|"
                    r"refused|timed out|usage:|fatal")  # matched on lowercased text: 6x faster than re.I
_ENTITY = re.compile(r"(?<![\w.-])[\w.-]*/[\w./-]+|\b[\w-]+\.[a-z]{1,5}\b|\b[A-Za-z_]+\d+[\w-]*\b"
                     r"|'[^'\n]{2,40}'|\"[^\"\n]{2,40}\"")
_WORD = re.compile(r"\w+")


@lru_cache(maxsize=8192)
def _entities(text: str) -> frozenset[str]:
    return frozenset(_ENTITY.findall(text))


def _scale(x: float) -> float:
    return round(1.0 + 4.0 * max(0.0, min(1.0, x)), 4)


def _ratio(a: float, b: float) -> float:
    return 1.0 if a == b == 0 else min(a, b) / max(a, b)


def _jaccard(a: Counter, b: Counter) -> float:
    union = sum((a | b).values())
    return 1.0 if union == 0 else sum((a & b).values()) / union


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _key_paths(value: Any, prefix: str = "") -> Counter:
    paths: Counter = Counter()
    if isinstance(value, dict):
        for key, child in value.items():
            paths[f"{prefix}/{key}"] += 1
            paths += _key_paths(child, f"{prefix}/{key}")
    elif isinstance(value, list):
        for child in value[:50]:
            paths += _key_paths(child, prefix + "[]")
    return paths


_MARKER = re.compile(r"^(- |\d+\. |\[\w+\]|[#>*|+]+|\w+@[\w-]+:|\$|Error|\w+:)")


def _shape(line: str) -> str:
    indent = (len(line) - len(line.lstrip())) // 2
    body = line.strip()
    marker = _MARKER.match(body)
    return f"{indent}:{marker.group(1) if marker else ('w' if body[:1].isalnum() else body[:1])}"


def _format(prediction: str, reference: str) -> float:
    ref_json = _json(reference)
    if ref_json is not None and isinstance(ref_json, dict | list):
        pred_json = _json(prediction)
        if pred_json is None:
            return 0.0
        return 0.5 + 0.5 * _jaccard(_key_paths(pred_json), _key_paths(ref_json))
    pred_lines, ref_lines = prediction.splitlines() or [""], reference.splitlines() or [""]
    shapes = _jaccard(Counter(map(_shape, pred_lines)), Counter(map(_shape, ref_lines)))
    return 0.5 * shapes + 0.5 * _ratio(len(pred_lines), len(ref_lines))


@lru_cache(maxsize=8192)
def _words(text: str) -> Counter:
    return Counter(_WORD.findall(text.lower()))


@lru_cache(maxsize=8192)
def _is_error(text: str) -> bool:
    return bool(_ERROR.search(text[:4000].lower()))  # error messages come first; big trees need not be scanned


def _f1(pred: Counter, ref: Counter) -> float:
    common = sum((pred & ref).values())
    if not pred and not ref:
        return 1.0
    if common == 0:
        return 0.0
    precision, recall = common / sum(pred.values()), common / sum(ref.values())
    return 2 * precision * recall / (precision + recall)


def _factuality(pred: str, ref: str, previous: str | None) -> float:
    words, reference = _words(pred), _words(ref)
    overlap = _f1(words, reference)
    if previous is None:
        return overlap
    before = _words(previous)
    new = reference - before
    if not new:  # nothing changed: repeating the screen is the right answer
        return overlap
    weight = max(CHANGE_WEIGHT, sum(new.values()) / sum(reference.values()))
    return (1 - weight) * overlap + weight * _f1(words - before, new)


def _quality(pred: str, ref: str, previous: str | None) -> float:
    ref_lines = [line.strip() for line in ref.splitlines() if line.strip()]
    pred_lines = {line.strip() for line in pred.splitlines()}
    if not ref_lines:
        return float(not pred_lines - {""})
    recall = sum(line in pred_lines for line in ref_lines) / len(ref_lines)
    if previous is None:
        return recall
    before = {line.strip() for line in previous.splitlines()}
    new = [line for line in ref_lines if line not in before]
    if not new:
        return recall
    weight = max(CHANGE_WEIGHT, len(new) / len(ref_lines))
    return (1 - weight) * recall + weight * sum(line in pred_lines for line in new) / len(new)


def rule_scores(prediction: str, reference: str, history: str | Sequence[str] = "",
                previous: str | None = None) -> dict[str, float]:
    """The five dimensions (1-5), ``total_score`` (their mean) and ``exact`` (0 or 1). ``history`` is the
    session's text, or its turns' texts (``history_parts``): then each turn is read once per run however many
    later samples repeat it, as a trajectory's samples do (and no entity spans two turns). ``previous`` is
    the previous real observation, when there is one: then factuality and quality score the change from it,
    so copying it earns little where the real observation changed."""
    pred, ref = mask(prediction.strip()), mask(reference.strip())
    before = mask(previous.strip()) if previous is not None else None
    factual = _factuality(pred, ref, before)
    parts = (history,) if isinstance(history, str) else history
    established = frozenset().union(*(_entities(mask(part)) for part in parts)) & _entities(ref)
    consistent = sum(e in pred for e in established) / len(established) if established else factual
    agree = _is_error(pred) == _is_error(ref)
    realism = 0.6 * agree + 0.4 * _ratio(len(pred), len(ref))
    quality = _quality(pred, ref, before)
    scores = {
        "format": _scale(_format(pred, ref)), "factuality": _scale(factual), "consistency": _scale(consistent),
        "realism": _scale(realism), "quality": _scale(quality),
    }
    scores["total_score"] = round(sum(scores[d] for d in DIMENSIONS) / len(DIMENSIONS), 4)
    scores["exact"] = float(" ".join(pred.split()) == " ".join(ref.split()))
    return scores


def clear_caches() -> None:
    """Forget memoized texts (for cold-start measurements)."""
    for cached in (mask, _entities, _words, _is_error):
        cached.cache_clear()
