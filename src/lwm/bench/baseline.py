"""Skill over the floors: how much a model beats answering each turn with the previous real observation
(copy-last), and with the real observation after the nearest retrieved transition (copy-retrieved).

Overlap metrics reward copying wherever an action changes little, so a raw score says little on its own;
the same samples scored for ``copy-last`` (``backends/baselines.py``) give the floor to read it against.
With the rule judge the floor is computed on the spot (no model, milliseconds); first turns, which have
nothing to copy, are left out of both sides.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from statistics import mean
from typing import Any

from lwm.bench.rows import sample_key
from lwm.bench.samples import BenchSample
from lwm.bench.scorer import RuleScorer
from lwm.bench.summary import domain_of, normalize
from lwm.parsing import published_output
from lwm.stats import standard_error


def copy_last_totals(samples: dict[str, BenchSample]) -> dict[str, float]:
    """The rule judge's total for copy-last's answer, by sample key (samples past their first turn)."""
    scorer = RuleScorer()

    async def run() -> dict[str, float]:
        totals = {}
        for key, sample in samples.items():
            if sample.turn_idx > 1 and sample.history:  # copy-last's answer: the last observation of the history
                verdict = await scorer.score(sample, published_output(sample.history[-1][1]))
                totals[key] = verdict.total_score or 1.0
        return totals

    return asyncio.run(run())


def copy_retrieved_totals(samples: dict[str, BenchSample]) -> dict[str, float]:
    """The rule judge's total for copy-retrieved's answer (``backends.baselines.CopyRetrievedBackend``: the
    nearest of lwm-mini's packaged real transitions, never from the sample's own trajectory), by sample key;
    samples where nothing was retrieved are left out, as first turns are of copy-last."""
    from lwm.domains import domain_names, get_domain
    from lwm.worldmodel import WorldModel

    scorer = RuleScorer()
    model = WorldModel("copy-retrieved", cache=False)
    known = set(domain_names())

    async def run() -> dict[str, float]:
        totals = {}
        for key, sample in samples.items():
            domain = get_domain(sample.domain) if sample.domain in known else None
            answer = await model.complete(sample.conversation(), domain, exclude={sample.trajectory_id})
            if answer.metadata.get("retrieved"):
                verdict = await scorer.score(sample, answer.content)
                totals[key] = verdict.total_score or 1.0
        return totals

    return asyncio.run(run())


def skill_over(rows: list[dict[str, Any]], baseline: dict[str, float], floor: str = "copy_last") -> dict[str, Any]:
    """Per domain and overall, on the valid samples the baseline also scored: the model's total, the
    baseline's (under ``floor``), and the difference (points on the 0-100 scale)."""
    pairs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for row in rows:
        key = sample_key(row["id"], row.get("occurrence"))
        if key in baseline and row.get("failed", 1.0) == 0.0 and row.get("total_score"):
            pairs[domain_of(row)].append((normalize(row["total_score"]), normalize(baseline[key])))

    def entry(items: list[tuple[float, float]]) -> dict[str, Any]:
        model, base = mean(m for m, _ in items), mean(b for _, b in items)
        se = standard_error([m - b for m, b in items])  # paired: the same samples, both judged alike
        return {"samples": len(items), "model": round(model, 2), floor: round(base, 2),
                "skill": round(model - base, 2), "se": None if se is None else round(se, 2)}

    every = [p for items in pairs.values() for p in items]
    return {"domains": {d: entry(items) for d, items in sorted(pairs.items())},
            "overall": entry(every) if every else None}
