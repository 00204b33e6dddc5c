"""Seconds per sample on the embedded backend, with and without prefix-aware scheduling.

Samples of one trajectory share a long prefix (system prompt + history). In trajectory order, llama.cpp
reuses the previous prompt's matching KV prefix and only evaluates the new turn; in a shuffled order
it re-evaluates most of every prompt. Both runs predict the same samples with the answer cache off; the
table shows the median seconds per sample and the total wall time of each run, and the ratio of totals
(what a user waits for).
Usage: python benchmarks/bench_embedded.py [--domain terminal] [--trajectories 2] [--turns 6]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from lwm.backends import GenerateConfig
from lwm.bench.run import infer, predictions
from lwm.bench.samples import load_samples
from lwm.worldmodel import WorldModel

DATA = Path(__file__).parents[1] / "data" / "bench-sample"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domain", default="terminal")
    parser.add_argument("--trajectories", type=int, default=2)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--state-cache", type=int, default=0, metavar="MB",
                        help="Also run both orders with the embedded backend's KV state cache of MB megabytes.")
    args = parser.parse_args()
    samples = [s for s in load_samples(DATA / f"{args.domain}_test.jsonl") if s.turn_idx <= args.turns]
    keys = list(dict.fromkeys(s.prefix_key for s in samples))[: args.trajectories]
    samples = [s for s in samples if s.prefix_key in keys]
    wm = WorldModel("embedded?n_ctx=8192&state_cache_mb=0", cache=False,  # the default has the state cache on
                    config=GenerateConfig(max_tokens=args.max_tokens))
    console = Console()
    results = {}
    runs = [("prefix-aware (trajectory order)", True, False), ("shuffled", False, False)]
    if args.state_cache:
        runs += [("shuffled + KV state cache", False, True), ("prefix-aware + KV state cache", True, True)]
    cached_wm = WorldModel(f"embedded?n_ctx=8192&state_cache_mb={args.state_cache}", cache=False,
                           config=GenerateConfig(max_tokens=args.max_tokens)) if args.state_cache else None
    for label, ordered, cached in runs:
        items = samples if ordered else random.Random(0).sample(samples, len(samples))
        out = Path(tempfile.mkdtemp(prefix="lwm-bench-embedded-"))
        model = cached_wm if cached else wm
        model.backend.llama.reset()
        if cached:
            model.backend.llama.cache.cache_state.clear()  # each run starts cold
        started = time.perf_counter()
        with console.status(f"{label}: {len(items)} samples..."):
            asyncio.run(infer(items, model, out, concurrency=1, prefix_order=ordered))
        wall = time.perf_counter() - started
        seconds = [r.seconds or 0.0 for r in predictions(out).by_id().values() if r.ok]
        results[label] = (statistics.median(seconds), wall, len(seconds))
    table = Table(title=f"embedded SmolLM2, {len(samples)} {args.domain} samples from {len(keys)} trajectories")
    for col in ("order", "median s/sample", "total wall s", "samples"):
        table.add_column(col, justify="right")
    for label, (median, total, count) in results.items():
        table.add_row(label, f"{median:.2f}", f"{total:.1f}", str(count))
    console.print(table)
    (_, fast, _), (_, slow, _), *rest = results.values()
    console.print(f"prefix-aware scheduling: [bold]{slow / fast:.2f}x[/] less total wall time than shuffled")
    if rest:
        console.print(f"KV state cache: shuffled [bold]{slow / rest[0][1]:.2f}x[/] less total wall time than "
                      f"shuffled without it; trajectory order {fast / rest[1][1]:.2f}x")


if __name__ == "__main__":
    main()
