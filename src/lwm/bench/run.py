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
from lwm.bench.protocol import PublishedProtocol
from lwm.bench.rows import RESULT_FIELDS, Judgement, Prediction, Verdict
from lwm.bench.samples import BenchSample
from lwm.bench.scorer import Scorer
from lwm.conversation import ContextOverflowError
from lwm.data.jsonl import JsonlFile
from lwm.domains import domain_names, get_domain
from lwm.parsing import OBSERVATION_TAG, published_output
from lwm.types import Observation
from lwm.worldmodel import WorldModel

PREDICTIONS, JUDGED, SCORES = "predictions.jsonl", "judged.jsonl", "scores.json"
Tick = Callable[[], None]
Item = TypeVar("Item")


def predictions(out: Path) -> JsonlFile[Prediction]:
    return JsonlFile(out / PREDICTIONS, Prediction, exclude_none=True)


def judgements(out: Path) -> JsonlFile[Judgement]:
    return JsonlFile(out / JUDGED, Judgement, exclude_none=True)


async def _each(items: list[Item], file: JsonlFile[Any], work: Callable[[Item], Awaitable[Any]],
                tick: Tick | None) -> tuple[dict[str, str], bool]:
    """Run ``work`` on every item concurrently, appending each result row to ``file`` as it finishes; the
    lines written, by key, and whether the file held nothing before them (so the file is put in data order
    without reading or parsing it again)."""
    written: dict[str, str] = {}
    empty = not file.path.exists() or file.path.stat().st_size == 0

    async def one(item: Item) -> None:
        row = await work(item)
        written[file.key(row)] = file.append(row)
        if tick:
            tick()

    try:
        await asyncio.gather(*(one(item) for item in items))
    finally:
        file.close()
    return written, empty


def schedule(samples: list[BenchSample]) -> list[BenchSample]:
    """Samples of one trajectory together and in turn order, trajectories in first-seen order."""
    first: dict[str, int] = {}
    for i, s in enumerate(samples):
        first.setdefault(s.prefix_key, i)
    return sorted(samples, key=lambda s: (first[s.prefix_key], s.turn_idx))


def pending_inference(samples: list[BenchSample], out: Path) -> list[BenchSample]:
    done = {key for key, row in predictions(out).by_id().items() if row.ok or row.never_fits}
    return [s for s in samples if s.key not in done]


def blank_row(sample: BenchSample) -> Prediction:
    """A sample's prediction row before it is predicted: the sample's own fields, none of a result's."""
    return Prediction.model_validate(sample.model_dump(exclude=RESULT_FIELDS, exclude_none=True))


def predictor(wm: WorldModel, budgets: dict[str, int] | None = None,
              protocol: PublishedProtocol | None = None) -> Callable[[BenchSample], Awaitable[Prediction]]:
    """How one sample is predicted and made a row, here or on a cluster's node. ``budgets`` gives a domain's answer
    tokens (else the model's ``max_tokens``). With the published ``protocol``, each sample's messages are sent
    whole, as the published script sends them (no turn dropped to fit: the answer budget shrinks to the room
    left, and a sample that does not fit at all fails)."""
    known = set(domain_names())

    async def predict(sample: BenchSample) -> Observation:
        domain = get_domain(sample.domain) if sample.domain in known else None
        wanted = budgets[sample.domain] if budgets and sample.domain in budgets else wm.config.max_tokens
        if protocol is None:
            config = wm.config.model_copy(update={"max_tokens": wanted}) if budgets else None
            return await wm.complete(sample.conversation(), domain, config, exclude={sample.trajectory_id})
        messages = protocol.inference_messages(sample)
        config = wm.config.model_copy(update={"max_tokens": wm.answer_room(messages, wanted), "stop_loops": False})
        return await wm.generate(messages, domain, config)

    async def one(sample: BenchSample) -> Prediction:
        started = time.perf_counter()
        row = blank_row(sample)
        try:
            obs = await predict(sample)
            tag = protocol.answer_tag(sample.domain) if protocol else OBSERVATION_TAG
            # An edit or a repaired answer is judged as the whole observation lwm made of it; any other as
            # published.
            made = "edit" in obs.metadata or "form" in obs.metadata
            extracted = obs.content if made else published_output(obs.raw or "", tag)
            row = row.model_copy(update=dict(gen=obs.raw or "", prediction=obs.content, extracted_output=extracted,
                                             parse=obs.metadata["parse"], cached=obs.metadata["cached"],
                                             model=obs.metadata["model"],
                                             finish_reason=obs.metadata.get("finish_reason"),
                                             edit=obs.metadata.get("edit"), form=obs.metadata.get("form")))
        except ContextOverflowError as exc:
            row = row.model_copy(update={"error_message": str(exc), "never_fits": True})
        except BackendError as exc:
            row = row.model_copy(update={"error_message": str(exc)})
        row.seconds = round(time.perf_counter() - started, 4)
        return row

    return one


def bounded(work: Callable[[Item], Awaitable[Any]], concurrency: int) -> Callable[[Item], Awaitable[Any]]:
    """``work`` with at most ``concurrency`` calls in flight."""
    limit = asyncio.Semaphore(concurrency)

    async def one(item: Item) -> Any:
        async with limit:
            return await work(item)

    return one


async def infer(samples: list[BenchSample], wm: WorldModel, out: Path, concurrency: int = 16,
                tick: Tick | None = None, prefix_order: bool = True, budgets: dict[str, int] | None = None,
                protocol: PublishedProtocol | None = None) -> int:
    """Predict every sample not yet in ``predictions.jsonl`` (as ``predictor`` does); returns how many were run."""
    todo = pending_inference(samples, out)
    todo = schedule(todo) if prefix_order else todo
    written, only = await _each(todo, predictions(out), bounded(predictor(wm, budgets, protocol), concurrency), tick)
    predictions(out).reorder((s.key for s in samples), written, only=only)
    return len(todo)


def pending_judging(out: Path) -> list[Prediction]:
    """Predictions with no judgement yet, or whose judgement was made on an answer since replaced."""
    judged = judgements(out).by_id()
    return [row for key, row in predictions(out).by_id().items()
            if key not in judged or not judged[key].same_answer(row)]


async def judge(samples: dict[str, BenchSample], out: Path, scorer: Scorer, concurrency: int = 16,
                tick: Tick | None = None) -> int:
    """Score every prediction not yet judged (or judged on an older answer) with ``scorer``. ``samples``
    is keyed by ``BenchSample.key``, in data order (the order judged.jsonl is left in)."""
    todo = pending_judging(out)
    limit = asyncio.Semaphore(concurrency)

    async def one(row: Prediction) -> Judgement:
        sample = samples.get(row.key)
        extracted = row.extracted_output if row.extracted_output is not None else published_output(row.gen)
        row = row.model_copy(update={"extracted_output": extracted})
        if sample is None:
            verdict = Verdict.failure("sample not in the benchmark data")
        elif not row.gen:
            verdict = Verdict.failure(row.error_message or "No model generation")
        else:
            async with limit:
                verdict = await scorer.score(sample, extracted)
        return Judgement.of(row, verdict)

    written, only = await _each(todo, judgements(out), one, tick)
    judgements(out).reorder([*samples, *predictions(out).by_id()], written, only=only)
    return len(todo)
