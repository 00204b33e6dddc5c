"""Inference and judging over a benchmark: concurrent, prefix-aware, appended as they finish, resumable.

Both stages append one JSON line per finished sample (``predictions.jsonl``, ``judged.jsonl``) and skip
finished ids on restart, so a killed run loses only the requests in flight. A prediction that failed
is predicted again on the next run, and a judgement whose prediction has since changed is judged
again. Inference orders samples by trajectory (shared system prompt and first action) then turn, so
that samples sharing a long prefix are sent back to back: llama.cpp reuses the previous prompt's KV
prefix, and vLLM/SGLang find the prefix in their cache.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from lwm.backends import BackendError
from lwm.bench.data import BenchSample
from lwm.bench.rows import Judgement, Prediction, Verdict
from lwm.bench.scorer import Scorer
from lwm.conversation import ContextOverflowError
from lwm.data.jsonl import JsonlFile
from lwm.domains import domain_names, get_domain
from lwm.worldmodel import WorldModel

PREDICTIONS, JUDGED, SCORES = "predictions.jsonl", "judged.jsonl", "scores.json"
Tick = Callable[[], None]
Item = TypeVar("Item")


def predictions(out: Path) -> JsonlFile[Prediction]:
    return JsonlFile(out / PREDICTIONS, Prediction, exclude_none=True)


def judgements(out: Path) -> JsonlFile[Judgement]:
    return JsonlFile(out / JUDGED, Judgement, exclude_none=True)


async def _each(items: list[Item], file: JsonlFile[Any], work: Callable[[Item], Awaitable[Any]],
                tick: Tick | None) -> int:
    """Run ``work`` on every item concurrently, appending each result row to ``file`` as it finishes."""
    async def one(item: Item) -> None:
        file.append(await work(item))
        if tick:
            tick()

    try:
        await asyncio.gather(*(one(item) for item in items))
    finally:
        file.close()
    return len(items)


def schedule(samples: list[BenchSample]) -> list[BenchSample]:
    """Samples of one trajectory together and in turn order, trajectories in first-seen order."""
    first: dict[str, int] = {}
    for i, s in enumerate(samples):
        first.setdefault(s.prefix_key, i)
    return sorted(samples, key=lambda s: (first[s.prefix_key], s.turn_idx))


def pending_inference(samples: list[BenchSample], out: Path) -> list[BenchSample]:
    done = {i for i, row in predictions(out).by_id().items() if row.ok or row.never_fits}
    return [s for s in samples if s.id not in done]


async def infer(samples: list[BenchSample], wm: WorldModel, out: Path, concurrency: int = 16,
                tick: Tick | None = None, prefix_order: bool = True, budgets: dict[str, int] | None = None) -> int:
    """Predict every sample not yet in ``predictions.jsonl``; returns how many were run. ``budgets`` gives
    a domain's answer tokens (else the model's ``max_tokens``)."""
    todo = pending_inference(samples, out)
    todo = schedule(todo) if prefix_order else todo
    limit = asyncio.Semaphore(concurrency)
    known = set(domain_names())

    async def one(sample: BenchSample) -> Prediction:
        async with limit:
            started = time.perf_counter()
            row = Prediction(id=sample.id, task=sample.task, turn_idx=sample.turn_idx)
            try:
                domain = get_domain(sample.domain) if sample.domain in known else None
                config = (wm.config.model_copy(update={"max_tokens": budgets[sample.domain]})
                          if budgets and sample.domain in budgets else None)
                obs = await wm.complete(sample.conversation(), domain, config)
                row = row.model_copy(update=dict(gen=obs.raw or "", prediction=obs.content,
                                                 parse=obs.metadata["parse"], cached=obs.metadata["cached"],
                                                 model=obs.metadata["model"]))
            except ContextOverflowError as exc:
                row = row.model_copy(update={"error_message": str(exc), "never_fits": True})
            except BackendError as exc:
                row = row.model_copy(update={"error_message": str(exc)})
            row.seconds = round(time.perf_counter() - started, 4)
        return row

    return await _each(todo, predictions(out), one, tick)


def pending_judging(out: Path) -> list[Prediction]:
    """Predictions with no judgement yet, or whose judgement was made on an answer since replaced."""
    judged = judgements(out).by_id()
    return [row for i, row in predictions(out).by_id().items() if i not in judged or not judged[i].same_answer(row)]


async def judge(samples: dict[str, BenchSample], out: Path, scorer: Scorer, concurrency: int = 16,
                tick: Tick | None = None) -> int:
    """Score every prediction not yet judged (or judged on an older answer) with ``scorer``."""
    todo = pending_judging(out)
    limit = asyncio.Semaphore(concurrency)

    async def one(row: Prediction) -> Judgement:
        sample = samples.get(row.id)
        if sample is None:
            verdict = Verdict.failure("sample not in the benchmark data")
        elif not row.gen and not row.prediction:
            verdict = Verdict.failure(row.error_message or "No model generation")
        else:
            async with limit:
                verdict = await scorer.score(sample, row.prediction)
        return Judgement.of(row, verdict)

    return await _each(todo, judgements(out), one, tick)
