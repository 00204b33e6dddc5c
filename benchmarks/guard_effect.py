"""The consistency guard's effect, side by side in one run: contradictions, rule score and cost per step.

Takes the sample bench's later turns (``--from-turn``, where the history has fixed facts) and predicts each
with the same model twice, without and with ``WorldModel(guard=True)``, samples interleaved. For every
answer: the facts it contradicts in the session's real history (``lwm.guard.Ledger``: repeated reads
answered differently, entity fields changed), the rule score (v2) against the real observation, and the
seconds it took. Prints per arm the share of answers with a contradiction, the mean rule total, the
median and total seconds, and what the guard did (resamples, repairs).
Usage: python benchmarks/guard_effect.py [--model embedded] [--per-domain 6] [--from-turn 4] [--max-tokens 256]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from lwm.backends import GenerateConfig
from lwm.bench.data import BenchSample, load_samples, spread
from lwm.bench.score import normalize
from lwm.bench.scorer import RuleScorer
from lwm.guard import Ledger
from lwm.parsing import published_output
from lwm.worldmodel import WorldModel

DATA = Path(__file__).parents[1] / "data" / "bench-sample"


async def one(wm: WorldModel, sample: BenchSample) -> dict:
    started = time.perf_counter()
    obs = await wm.complete(sample.conversation())
    seconds = time.perf_counter() - started
    conflicts = Ledger.from_pairs(sample.history).conflicts(sample.conversation().current or "", obs.content)
    verdict = await RuleScorer().score(sample, published_output(obs.raw or "") if not obs.metadata.get("guard", {})
                                       .get("repaired") else obs.content)
    return {"seconds": seconds, "conflicts": len(conflicts), "total": normalize(verdict.total_score or 1.0),
            "guard": obs.metadata.get("guard")}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--per-domain", type=int, default=6)
    parser.add_argument("--from-turn", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=256)
    args = parser.parse_args()
    later = [s for s in load_samples(DATA) if s.turn_idx >= args.from_turn]
    samples = spread(later, args.per_domain)
    config = GenerateConfig(temperature=0.0, max_tokens=args.max_tokens)
    arms = {"no guard": WorldModel(args.model, config=config, cache=False),
            "guard": WorldModel(args.model, config=config, cache=False, guard=True)}
    results: dict[str, list[dict]] = {name: [] for name in arms}
    console = Console(width=150)
    with console.status(f"{len(samples)} samples x {len(arms)} arms...") as status:
        for i, sample in enumerate(samples):
            for name, wm in arms.items():
                results[name].append(await one(wm, sample))
            status.update(f"{i + 1}/{len(samples)} samples x {len(arms)} arms...")
    table = Table(title=f"consistency guard, {args.model}, {len(samples)} samples of turns {args.from_turn}+ "
                        f"({', '.join(f'{d} {n}' for d, n in sorted(Counter(s.domain for s in samples).items()))})")
    for col in ("arm", "answers contradicting the history", "contradictions", "rule total (v2)",
                "median s/step", "total s", "resampled", "repaired"):
        table.add_column(col, justify="right")
    for name, rows in results.items():
        guards = [r["guard"] for r in rows if r["guard"]]
        table.add_row(name, f"{sum(r['conflicts'] > 0 for r in rows)} / {len(rows)}",
                      str(sum(r["conflicts"] for r in rows)), f"{statistics.fmean(r['total'] for r in rows):.1f}",
                      f"{statistics.median(r['seconds'] for r in rows):.2f}", f"{sum(r['seconds'] for r in rows):.1f}",
                      str(sum(g["resamples"] > 0 for g in guards)) if guards else "-",
                      str(sum(g["repaired"] for g in guards)) if guards else "-")
    console.print(table)
    plain, guarded = (sum(r["seconds"] for r in rows) for rows in results.values())
    console.print(f"guard cost: {guarded / plain:.2f}x the time without it; "
                  f"{1000 * (guarded - plain) / len(samples):+.0f} ms per step")


if __name__ == "__main__":
    asyncio.run(main())
