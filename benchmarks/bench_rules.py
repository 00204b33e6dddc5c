"""Rule-metric speed on the committed sample bench: cold, and warm (references and histories seen before,
as when rule scores are an RL reward over the same samples). Prints samples per second.
Usage: python benchmarks/bench_rules.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from lwm.bench.rules import clear_caches, rule_scores
from lwm.bench.samples import load_samples
from lwm.conversation import history_parts
from lwm.parsing import remove_marker

DATA = Path(__file__).parents[1] / "data" / "bench-sample"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    samples = load_samples(DATA)
    # as lwm bench's rules judge calls it: the history turn by turn, and the previous real observation
    rows = [(s.reference, history_parts(s.history), remove_marker(s.history[-1][1]) if s.history else None)
            for s in samples]
    rates: dict[str, list[float]] = {"cold": [], "warm": []}
    for round_ in range(args.rounds):
        clear_caches()
        preds = [random.Random(round_ * 1000 + i).choice(rows)[0] + f"\n{round_}" for i in range(len(rows))]
        for label in ("cold", "warm"):
            start = time.perf_counter()
            for (ref, hist, previous), pred in zip(rows, preds, strict=True):
                rule_scores(pred + label, ref, hist, previous)
            rates[label].append(len(rows) / (time.perf_counter() - start))
    table = Table(title=f"rule scores on {len(rows)} sample-bench samples (median of {args.rounds} rounds)")
    table.add_column("cache")
    table.add_column("samples/s", justify="right")
    for label, values in rates.items():
        table.add_row(label, f"{statistics.median(values):.0f}")
    Console().print(table)


if __name__ == "__main__":
    main()
