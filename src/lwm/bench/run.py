"""Inference and judging over a benchmark: concurrent, prefix-aware, appended as they finish, resumable.

Both stages append one JSON line per finished sample and skip finished ids on restart, so a killed
run loses only the requests in flight. Inference orders samples by trajectory (shared system prompt
and first action) then turn, so that samples sharing a long prefix are sent back to back: llama.cpp
reuses the previous prompt's KV prefix, and vLLM/SGLang find the prefix in their cache.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lwm.backends import Backend, BackendError
from lwm.bench.data import BenchSample
from lwm.bench.judge import llm_verdict
from lwm.bench.rules import rule_scores
from lwm.domains import domain_names, get_domain
from lwm.worldmodel import ContextOverflowError, WorldModel

PREDICTIONS, JUDGED, SCORES = "predictions.jsonl", "judged.jsonl", "scores.json"
Tick = Callable[[], None]


def read_rows(path: Path, problems: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Rows by id (the last line of an id wins); a broken line (e.g. cut by a kill) is reported and skipped."""
    rows: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return rows
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                rows[str(row["id"])] = row
            except (ValueError, KeyError, TypeError):
                if problems is not None:
                    problems.append(f"{path}:{number}: skipped unreadable line")
    return rows


class _Appender:
    """Appends whole lines and flushes each, so a kill leaves at most one partial line."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
            with path.open("ab") as handle:  # end a line a kill cut short; readers skip it
                handle.write(b"\n")
        self.handle = path.open("a", encoding="utf-8")

    def write(self, row: dict[str, Any]) -> None:
        self.handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()


async def _each(items: list[Any], path: Path, work: Callable[[Any], Awaitable[dict[str, Any]]],
                tick: Tick | None) -> int:
    """Run ``work`` on every item concurrently, appending each result row to ``path`` as it finishes."""
    writer = _Appender(path)

    async def one(item: Any) -> None:
        writer.write(await work(item))
        if tick:
            tick()

    try:
        await asyncio.gather(*(one(item) for item in items))
    finally:
        writer.close()
    return len(items)


def schedule(samples: list[BenchSample]) -> list[BenchSample]:
    """Samples of one trajectory together and in turn order, trajectories in first-seen order."""
    first: dict[str, int] = {}
    for i, s in enumerate(samples):
        first.setdefault(s.prefix_key, i)
    return sorted(samples, key=lambda s: (first[s.prefix_key], s.turn_idx))


def pending_inference(samples: list[BenchSample], out: Path) -> list[BenchSample]:
    done = {i for i, row in read_rows(out / PREDICTIONS).items() if not row.get("error")}
    return [s for s in samples if s.id not in done]


async def infer(samples: list[BenchSample], wm: WorldModel, out: Path, concurrency: int = 16,
                tick: Tick | None = None, prefix_order: bool = True) -> int:
    """Predict every sample not yet in ``predictions.jsonl``; returns how many were run."""
    todo = pending_inference(samples, out)
    todo = schedule(todo) if prefix_order else todo
    limit = asyncio.Semaphore(concurrency)
    known = set(domain_names())

    async def one(sample: BenchSample) -> dict[str, Any]:
        async with limit:
            started = time.perf_counter()
            row: dict[str, Any] = {"id": sample.id, "task": sample.task, "turn_idx": sample.turn_idx}
            try:
                domain = get_domain(sample.domain) if sample.domain in known else None
                obs = await wm.complete(sample.messages(), domain)
                row.update(gen=obs.raw, prediction=obs.content, parse=obs.metadata["parse"],
                           cached=obs.metadata["cached"], model=obs.metadata["model"])
            except (BackendError, ContextOverflowError) as exc:
                row.update(gen="", prediction="", error=str(exc))
            row["seconds"] = round(time.perf_counter() - started, 4)
        return row

    return await _each(todo, out / PREDICTIONS, one, tick)


def pending_judging(out: Path) -> list[dict[str, Any]]:
    judged = read_rows(out / JUDGED)
    return [row for i, row in read_rows(out / PREDICTIONS).items() if i not in judged]


async def judge(samples: dict[str, BenchSample], out: Path, judge_backend: Backend | None, concurrency: int = 16,
                tick: Tick | None = None, prompts_dir: str | Path | None = None, retries: int = 3) -> int:
    """Score every prediction not yet in ``judged.jsonl``, with rules (``judge_backend`` None) or an LLM."""
    todo = pending_judging(out)
    limit = asyncio.Semaphore(concurrency)

    async def one(row: dict[str, Any]) -> dict[str, Any]:
        sample = samples.get(row["id"])
        result = {**row}
        if sample is None:
            result.update(failed=1.0, error_message="sample not in the benchmark data")
        elif not row.get("gen") and not row.get("prediction"):
            result.update(failed=1.0, error_message=row.get("error") or "No model generation")
        elif judge_backend is None:
            history = "\n".join(f"{p}\n{r}" for p, r in sample.history)
            result.update(rule_scores(row.get("prediction", ""), sample.reference, history), failed=0.0,
                          judge="rules")
        else:
            async with limit:
                result.update(await llm_verdict(sample, row.get("prediction", ""), judge_backend, prompts_dir,
                                                 retries))
        return result

    return await _each(todo, out / JUDGED, one, tick)
