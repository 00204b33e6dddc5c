"""Does a simulated episode's step cost grow with the history already evaluated? Side by side in one run.

Plays the longest episode of a domain in the sample bench step by step on the embedded model (each step:
the system prompt, every earlier turn, the next action; greedy, ``--max-tokens`` answer tokens), twice,
interleaved step by step:
- lwm as it runs: llama.cpp keeps the previous prompt's KV prefix, and the KV state cache restores earlier
  states, so a step evaluates only the new turn;
- re-evaluated: the same model with its KV cache cleared before every step (what each step would cost if
  the history were evaluated again).
Prints each step's history size and seconds in both, the fitted growth (ms per 1,000 history tokens) and
the ratio of the last steps' times.
Usage: python benchmarks/sim_step_growth.py [--domain terminal] [--max-tokens 16]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from lwm.backends import GenerateConfig
from lwm.backends.embedded import EmbeddedBackend
from lwm.bench.data import BenchSample, load_samples
from lwm.worldmodel import WorldModel

DATA = Path(__file__).parents[1] / "data" / "bench-sample"


def slope(xs: list[float], ys: list[float]) -> float:
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


async def step(wm: WorldModel, sample: BenchSample) -> tuple[float, int]:
    started = time.perf_counter()
    obs = await wm.complete(sample.conversation())
    return time.perf_counter() - started, obs.metadata["prompt_tokens"] or 0


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domain", default="terminal")
    parser.add_argument("--max-tokens", type=int, default=16)
    args = parser.parse_args()
    samples = [s for s in load_samples(DATA) if s.domain == args.domain]
    longest = max(samples, key=lambda s: len(s.prompt))
    episode = [longest.model_copy(update={"turn_idx": k}) for k in range(1, len(longest.prompt) + 1)]
    config = GenerateConfig(temperature=0.0, max_tokens=args.max_tokens)
    kept = WorldModel(EmbeddedBackend(), config=config, cache=False)
    fresh_backend = EmbeddedBackend(state_cache_mb=0, n_batch=511)  # its own llama.cpp instance
    fresh = WorldModel(fresh_backend, config=config, cache=False)
    await step(kept, episode[0])  # load both models before timing
    await step(fresh, episode[0])
    rows = []
    for sample in episode:
        fresh_backend.llama.reset()
        fresh_s, tokens = await step(fresh, sample)
        kept_s, _ = await step(kept, sample)
        rows.append((sample.turn_idx, tokens, kept_s, fresh_s))
    table = Table(title=f"{args.domain} episode of {len(episode)} steps, embedded model, {args.max_tokens} answer "
                        "tokens a step")
    for col in ("step", "prompt tokens", "lwm s", "re-evaluated s"):
        table.add_column(col, justify="right")
    for turn, tokens, kept_s, fresh_s in rows:
        table.add_row(str(turn), str(tokens), f"{kept_s:.2f}", f"{fresh_s:.2f}")
    console = Console(width=140)
    console.print(table)
    tokens = [r[1] / 1000 for r in rows]
    last = rows[-3:]
    console.print(f"growth: lwm {1000 * slope(tokens, [r[2] for r in rows]):+.0f} ms per 1k history tokens, "
                  f"re-evaluated {1000 * slope(tokens, [r[3] for r in rows]):+.0f} ms per 1k")
    console.print(f"last 3 steps: lwm {statistics.median(r[2] for r in last):.2f} s, re-evaluated "
                  f"{statistics.median(r[3] for r in last):.2f} s: "
                  f"{statistics.median(r[3] for r in last) / statistics.median(r[2] for r in last):.1f}x; "
                  f"whole episode {sum(r[2] for r in rows):.1f} s vs {sum(r[3] for r in rows):.1f} s")


if __name__ == "__main__":
    asyncio.run(main())
