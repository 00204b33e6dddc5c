"""The consistency guard's effect, side by side in one run: contradictions, rule score and cost per step.

Two probe sets from the sample bench, each predicted by the same model without and with
``WorldModel(guard=True)``:
- *next turns*: the later turns as recorded (``--from-turn``), where the history has fixed facts;
- *repeated reads*: the same sessions asked again for a read the history already answered (the earlier
  read-only action, nothing that may change it since): a simulator that forgets contradicts itself here.
For every answer: the facts it contradicts in the session's real history (``lwm.guard.Ledger``), the rule
score (v2) against the real observation (next turns only), and the seconds. Both arms share one answer cache
(a fresh one), so the guard's first answer is the plain arm's and its time is what the guard adds: checking,
sampling again, repairing.
Usage: python benchmarks/guard_effect.py [--model embedded] [--per-domain 6] [--from-turn 4] [--max-tokens 256]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from lwm.backends import GenerateConfig
from lwm.bench.samples import BenchSample, load_samples, spread
from lwm.bench.scorer import RuleScorer
from lwm.bench.summary import normalize
from lwm.cache import GenerationCache
from lwm.guard import Ledger, action_key
from lwm.parsing import published_output
from lwm.worldmodel import WorldModel

DATA = Path(__file__).parents[1] / "data" / "bench-sample"


def repeated_read(sample: BenchSample) -> BenchSample | None:
    """``sample`` asked again for the last read its history answered that nothing has changed since."""
    ledger = Ledger.from_pairs(sample.history)
    reads = [user for user, _ in sample.history if action_key(user)[0] in ledger.reads]
    if not reads:
        return None
    turn = re.sub(r"### Turn \d+", f"### Turn {sample.turn_idx}", reads[-1])
    prompt = [*sample.prompt[: sample.index], turn, *sample.prompt[sample.index + 1:]]
    return sample.model_copy(update={"prompt": prompt, "id": f"{sample.id}-again"})


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
    probes = {"next turns": spread(later, args.per_domain),
              "repeated reads": spread([r for s in later if (r := repeated_read(s))], args.per_domain)}
    config = GenerateConfig(temperature=0.0, max_tokens=args.max_tokens)
    cache = GenerationCache(Path(tempfile.mkdtemp(prefix="lwm-guard-")) / "cache.sqlite")
    arms = {"no guard": WorldModel(args.model, config=config, cache=cache),
            "guard": WorldModel(args.model, config=config, cache=cache, guard=True)}
    console = Console(width=150)
    table = Table(title=f"consistency guard, {args.model}, sample bench turns {args.from_turn}+")
    for col in ("probes", "arm", "answers contradicting the history", "contradictions", "rule total (v2)",
                "s/step (median)", "total s", "resampled", "repaired"):
        table.add_column(col, justify="right")
    for probe, samples in probes.items():
        results: dict[str, list[dict]] = {name: [] for name in arms}
        with console.status(f"{probe}: {len(samples)} samples...") as status:
            for i, sample in enumerate(samples):
                for name, wm in arms.items():  # the plain arm first: the guard's first answer is then cached
                    results[name].append(await one(wm, sample))
                status.update(f"{probe}: {i + 1}/{len(samples)} samples")
        domains = ", ".join(f"{d} {n}" for d, n in sorted(Counter(s.domain for s in samples).items()))
        for name, rows in results.items():
            guards = [r["guard"] for r in rows if r["guard"]]
            table.add_row(f"{probe} ({domains})" if name == "no guard" else "", name,
                          f"{sum(r['conflicts'] > 0 for r in rows)} / {len(rows)}",
                          str(sum(r["conflicts"] for r in rows)),
                          f"{statistics.fmean(r['total'] for r in rows):.1f}" if probe == "next turns" else "-",
                          f"{statistics.median(r['seconds'] for r in rows):.2f}",
                          f"{sum(r['seconds'] for r in rows):.1f}",
                          str(sum(g["resamples"] > 0 for g in guards)) if guards else "-",
                          str(sum(g["repaired"] for g in guards)) if guards else "-")
        table.add_section()
    console.print(table)
    console.print("The guard arm's seconds are what it adds to a step (its first answer comes from the cache the "
                  "plain arm filled).")


if __name__ == "__main__":
    asyncio.run(main())
