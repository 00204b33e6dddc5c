"""Does a simulated episode's step cost grow with the history already evaluated? Side by side in one run.

Plays the longest episode of a domain in the sample bench step by step on the embedded model (each step:
the system prompt, every earlier turn, the next action; greedy, ``--max-tokens`` answer tokens), twice,
interleaved step by step:
- lwm as it runs: llama.cpp keeps the previous prompt's KV prefix, and the KV state cache restores earlier
  states, so a step evaluates only the new turn;
- re-evaluated: the same model with its KV cache cleared before every step (what each step would cost if
  the history were evaluated again).
Prints each step's history and new tokens, the seconds in both, and each arm's milliseconds per token it
processed (lwm: the new turn and the answer; re-evaluated: the whole prompt and the answer). If lwm paid
for the history again, its time would track the re-evaluated arm's; what is left of its growth is the
attention of each new token over a longer context, which the per-token cost of both arms shows alike.
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
from lwm.bench.samples import BenchSample, load_samples
from lwm.worldmodel import WorldModel

DATA = Path(__file__).parents[1] / "data" / "bench-sample"


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
    warm = BenchSample(task=args.domain, id="warm-up", prompt=["echo hello"], response=[""])
    await step(kept, warm)  # load both models before timing, on a prompt the episode does not share
    await step(fresh, warm)
    rows = []
    for sample in episode:
        fresh_backend.llama.reset()
        fresh_s, tokens = await step(fresh, sample)
        kept_s, _ = await step(kept, sample)
        rows.append((sample.turn_idx, tokens, kept_s, fresh_s))
    table = Table(title=f"{args.domain} episode of {len(episode)} steps, embedded model, {args.max_tokens} answer "
                        "tokens a step")
    for col in ("step", "history tokens", "new tokens", "lwm s", "lwm ms/token", "re-evaluated s",
                "re-evaluated ms/token"):
        table.add_column(col, justify="right")
    answer = args.max_tokens
    for i, (turn, tokens, kept_s, fresh_s) in enumerate(rows):
        history = rows[i - 1][1] if i else 0
        table.add_row(str(turn), str(history), str(tokens - history), f"{kept_s:.2f}",
                      f"{1000 * kept_s / (tokens - history + answer):.1f}", f"{fresh_s:.2f}",
                      f"{1000 * fresh_s / (tokens + answer):.1f}")
    console = Console(width=160)
    console.print(table)
    last = rows[-3:]
    console.print(f"last 3 steps: lwm {statistics.median(r[2] for r in last):.2f} s, re-evaluated "
                  f"{statistics.median(r[3] for r in last):.2f} s: "
                  f"{statistics.median(r[3] for r in last) / statistics.median(r[2] for r in last):.1f}x; "
                  f"whole episode {sum(r[2] for r in rows):.1f} s vs {sum(r[3] for r in rows):.1f} s")


if __name__ == "__main__":
    asyncio.run(main())
