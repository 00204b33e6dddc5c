"""Benchmark inference spread over a Ray cluster (``lwm bench infer|run --executor ray``).

The samples still to predict go out in shards (in prefix order, so samples sharing a prompt prefix stay on one
node's cache), each shard a Ray task that predicts it with a world model of its own node (built once per worker
process from the run's ``ModelOptions``: an embedded model loads once, a served one keeps its connections), and
the rows come back here, where they are appended as each shard ends: no folder is shared, a row is written once,
and a shard whose node died runs again on another.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from lwm.bench.protocol import PublishedProtocol
from lwm.bench.rows import Prediction
from lwm.bench.run import Tick, blank_row, bounded, pending_inference, predictions, predictor, schedule
from lwm.bench.samples import BenchSample
from lwm.model_options import ModelOptions, world_model
from lwm.rollout.cluster import remote_map
from lwm.worldmodel import WorldModel, run_sync


@dataclass(frozen=True)
class Shard:
    samples: list[BenchSample]
    options: ModelOptions
    concurrency: int
    budgets: dict[str, int] | None = None
    protocol: PublishedProtocol | None = None


_models: dict[str, WorldModel] = {}
"""This worker process's world models, by their options: a worker predicts many shards with one model."""


def predict_shard(shard: Shard) -> list[Prediction]:
    """One shard's rows, predicted on whichever node runs it."""
    key = f"{shard.options!r} {shard.concurrency}"
    if key not in _models:
        _models[key] = world_model(shard.options, concurrency=shard.concurrency)
    one = bounded(predictor(_models[key], shard.budgets, shard.protocol), shard.concurrency)

    async def every() -> list[Prediction]:
        return list(await asyncio.gather(*(one(sample) for sample in shard.samples)))

    return run_sync(every())


async def infer_on_cluster(samples: list[BenchSample], options: ModelOptions, out: Path, concurrency: int = 16,
                           tick: Tick | None = None, budgets: dict[str, int] | None = None,
                           protocol: PublishedProtocol | None = None, shard_size: int | None = None) -> int:
    """Predict every sample not yet in ``predictions.jsonl`` as Ray tasks of ``shard_size`` samples (default: the
    concurrency, so each node runs a shard at its full concurrency); returns how many were run."""
    todo = schedule(pending_inference(samples, out))
    size = max(1, shard_size or concurrency)
    shards = [Shard(todo[i:i + size], options, concurrency, budgets, protocol) for i in range(0, len(todo), size)]
    file = predictions(out)

    def drive() -> None:
        for shard, rows in remote_map(predict_shard, shards):
            if isinstance(rows, BaseException):  # every retry failed: the shard's rows say why, a rerun retries
                rows = [failed(sample, rows) for sample in shard.samples]
            for row in rows:
                file.append(row)
                if tick:
                    tick()
        file.close()

    await asyncio.to_thread(drive)
    file.reorder(s.key for s in samples)
    return len(todo)


def failed(sample: BenchSample, exc: BaseException) -> Prediction:
    """A row for a sample whose shard never came back (not ``ok``: the next run predicts it again)."""
    return blank_row(sample).model_copy(update={"error_message": f"{type(exc).__name__}: {exc}"[:500]})
