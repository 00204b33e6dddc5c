"""Agent rollout steps per second in the simulator vs the real environment, side by side in one run.

The same tasks, the same policy (the scripted experts by default, so that only the environment's cost
differs; or any --policy spec), the same batch: rounds alternate sim and real, and each round reports
rollout steps per second of total wall time (environment start-up included: the figure a user pays
for), model calls per step, and the sim/real ratio. Medians over rounds (these machines are noisy).

Usage: python benchmarks/rollout_throughput.py [--domain search] [--tasks 8] [--rounds 3]
       [--world-model embedded:lwm-mini] [--policy expert] [--max-steps 4]
"""

from __future__ import annotations

import argparse
import statistics
import time

from rich.console import Console
from rich.table import Table

from lwm.agent.policy import make_policy
from lwm.rollout.loop import run_episodes
from lwm.rollout.tasks import tasks
from lwm.worldmodel import WorldModel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domain", default="search")
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--world-model", default="embedded:lwm-mini")
    parser.add_argument("--policy", default="expert")
    parser.add_argument("--max-steps", type=int, default=4)
    args = parser.parse_args()
    console = Console()
    chosen = tasks(args.domain, "heldout")[: args.tasks]
    policy = make_policy(args.policy, chosen)
    wm = WorldModel(args.world_model, cache=False)  # a cache would make later sim rounds free
    results: dict[str, list[tuple[float, float, float, float]]] = {"sim": [], "real": []}
    for round_ in range(args.rounds):
        for env in (("sim", "real") if round_ % 2 == 0 else ("real", "sim")):
            with console.status(f"round {round_ + 1}/{args.rounds}: {len(chosen)} episodes in {env}..."):
                started = time.perf_counter()
                episodes = run_episodes(chosen, policy, env, world_model=wm, max_steps=args.max_steps, seed=round_)
                seconds = time.perf_counter() - started
            steps = sum(e.steps for e in episodes)
            calls = sum(e.world_model_calls + e.policy_calls for e in episodes)
            results[env].append((steps / seconds, calls / max(steps, 1), seconds,
                                 statistics.mean(e.reward for e in episodes)))
    table = Table(title=f"{args.policy} on {len(chosen)} {args.domain} held-out tasks, median of {args.rounds} rounds")
    for col in ("environment", "rollout steps/s", "model calls / step", "wall s / batch", "mean reward"):
        table.add_column(col, justify="left" if col == "environment" else "right")
    medians = {env: [statistics.median(r[i] for r in rows) for i in range(4)] for env, rows in results.items()}
    for env, (rate, calls, seconds, reward) in medians.items():
        table.add_row(env, f"{rate:.2f}", f"{calls:.2f}", f"{seconds:.1f}", f"{reward:.3f}")
    console.print(table)
    console.print(f"sim / real rollout speed: [bold]{medians['sim'][0] / medians['real'][0]:.3f}x[/] "
                  f"(world model: {wm.backend.name})")


if __name__ == "__main__":
    main()
