"""Real steps per second of collection, per domain, with 1 and 2 workers, measured in one run.

Each configuration records the same episodes (same seeds) into a fresh folder; the rate counts every
recorded step over the wall time of the whole batch, environment start-up included (that is what a
collection pays). Prints a table with the 2-worker / 1-worker ratio.
Usage: python benchmarks/collect_throughput.py [--episodes 4] [--steps 6] [--domains terminal,swe,...]
"""

from __future__ import annotations

import argparse
import tempfile
import time

from rich.console import Console
from rich.table import Table

from lwm.collect import plan, run

DOMAINS = {"terminal": {}, "swe": {}, "mcp": {"preset": "memory"}, "search": {}, "web": {}, "os": {}}


def rate(domain: str, options: dict, episodes: int, steps: int, workers: int) -> tuple[float, int, int]:
    """(steps per second, steps recorded, failed episodes)."""
    out = tempfile.mkdtemp(prefix=f"lwm-bench-{domain}-")
    todo, _ = plan(domain, episodes, steps, 0, out, options)
    started = time.perf_counter()
    results = run(todo, workers)
    seconds = time.perf_counter() - started
    recorded = sum(r.turns for r in results)
    return recorded / seconds, recorded, sum(1 for r in results if r.error)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--domains", default=",".join(DOMAINS))
    args = parser.parse_args()
    console = Console()
    table = Table(title=f"collection throughput ({args.episodes} episodes x {args.steps} steps per cell)")
    for col in ("domain", "1 worker (steps/s)", "2 workers (steps/s)", "2w / 1w", "failed episodes"):
        table.add_column(col, justify="left" if col == "domain" else "right")
    for domain in args.domains.split(","):
        with console.status(f"{domain}: 1 worker, then 2..."):
            one, _, failed_one = rate(domain, DOMAINS[domain], args.episodes, args.steps, 1)
            two, _, failed_two = rate(domain, DOMAINS[domain], args.episodes, args.steps, 2)
        table.add_row(domain, f"{one:.2f}", f"{two:.2f}", f"{two / one:.2f}x", str(failed_one + failed_two))
    console.print(table)


if __name__ == "__main__":
    main()
