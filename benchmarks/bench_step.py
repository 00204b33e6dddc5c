"""What lwm costs per simulated step, measured side by side in one run.

1. Overhead: SimEnv.step through WorldModel with a zero-latency mock backend, against calling the
   mock backend directly with the same messages. Target: under 1 ms per step.
   Recording: the same step through RecordTrajectory (what every face, the agent loop and collection record
   with), against the bare SimEnv step, the two episodes stepped alternately. Target: under 0.1 ms per step.
2. Embedded throughput: WorldModel.predict on the embedded llama.cpp model, against calling
   llama-cpp-python's create_chat_completion directly on the same messages and settings, runs
   interleaved, KV cache reset before each so both pay the full prompt. Target: at least 95%.

Prints medians and ratios (machines are noisy: do not read single runs).
Usage: python benchmarks/bench_step.py [--steps 300] [--rounds 3] [--reps 10] [--max-tokens 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time

from rich.console import Console
from rich.table import Table

from lwm.backends import GenerateConfig, MockBackend
from lwm.cache import GenerationCache
from lwm.envs import RecordTrajectory, SimEnv
from lwm.types import Action, Context, Trajectory
from lwm.worldmodel import WorldModel

console = Console()


def step_action(i: int) -> str:
    return json.dumps([{"keystrokes": f"echo step {i}\n", "duration": 0.1}])


def overhead(steps: int, cache: bool) -> tuple[float, float]:
    """(median ms per SimEnv.step, median ms per direct backend call) over one episode of ``steps``."""
    backend = MockBackend()
    store = GenerationCache(tempfile.mkdtemp() + "/bench.sqlite") if cache else False
    env = SimEnv(WorldModel(backend, cache=store), "terminal", Context(task="benchmark"))
    env.reset(seed=0)
    through: list[float] = []
    for i in range(steps):
        start = time.perf_counter()
        env.step(step_action(i))
        through.append(time.perf_counter() - start)
    direct: list[float] = []
    loop = asyncio.new_event_loop()
    config = GenerateConfig()
    for messages in list(backend.calls):
        start = time.perf_counter()
        loop.run_until_complete(backend.generate(messages, config))
        direct.append(time.perf_counter() - start)
    loop.close()
    return statistics.median(through) * 1e3, statistics.median(direct) * 1e3


def recording(steps: int) -> tuple[float, float]:
    """(median ms per recorded step, median ms per bare SimEnv.step), two episodes stepped alternately."""
    def env() -> SimEnv:
        return SimEnv(WorldModel(MockBackend(), cache=False), "terminal", Context(task="benchmark"))

    recorded, bare = RecordTrajectory(env()), env()
    recorded.reset(seed=0)
    bare.reset(seed=0)
    times: dict[str, list[float]] = {"recorded": [], "bare": []}
    for i in range(steps):
        for name, target in (("recorded", recorded), ("bare", bare))[:: 1 if i % 2 else -1]:
            start = time.perf_counter()
            target.step(step_action(i))
            times[name].append(time.perf_counter() - start)
    return statistics.median(times["recorded"]) * 1e3, statistics.median(times["bare"]) * 1e3


def embedded(reps: int, max_tokens: int) -> tuple[float, float]:
    """(median tokens/s through lwm, median tokens/s calling llama-cpp-python directly)."""
    config = GenerateConfig(temperature=0.0, seed=0, max_tokens=max_tokens)
    wm = WorldModel("embedded", config=config, cache=False)
    llm = wm.backend.llama
    history = Trajectory(domain="terminal")
    via_lwm: list[float] = []
    direct: list[float] = []
    def through_lwm(action: Action) -> float:
        llm.reset()
        start = time.perf_counter()
        obs = wm.predict_sync(history, action)
        return obs.metadata["completion_tokens"] / (time.perf_counter() - start)

    def directly(messages: list) -> float:
        llm.reset()
        start = time.perf_counter()
        out = llm.create_chat_completion(messages=messages, temperature=0.0, max_tokens=max_tokens, seed=0,
                                         top_p=1.0, stop=list(wm.config.stop or []) or None)
        return out["usage"]["completion_tokens"] / (time.perf_counter() - start)

    for i in range(reps + 1):  # the first round warms up and is not counted
        action = Action(content=[{"keystrokes": f"cat notes_{i}.txt\n", "duration": 0.1}])
        messages = wm.build_prompt(history, action).messages
        if i % 2:  # alternate which goes first, so drift on a noisy machine does not favour one side
            rates = directly(messages), through_lwm(action)
            rates = rates[1], rates[0]
        else:
            rates = through_lwm(action), directly(messages)
        if i:
            via_lwm.append(rates[0])
            direct.append(rates[1])
    return statistics.median(via_lwm), statistics.median(direct)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--skip-embedded", action="store_true")
    args = parser.parse_args()

    table = Table(title="lwm per-step cost (medians)")
    for col in ("measure", "through lwm", "direct", "lwm overhead / ratio", "target", "met"):
        table.add_column(col)
    with console.status("overhead with the mock backend..."):
        for steps in (50, args.steps):
            for cache in (False, True):
                # Rounds smooth out a noisy machine: the median over rounds of each round's median.
                rounds = [overhead(steps, cache) for _ in range(args.rounds)]
                lwm_ms = statistics.median(r[0] for r in rounds)
                direct_ms = statistics.median(r[1] for r in rounds)
                extra = lwm_ms - direct_ms
                table.add_row(f"SimEnv.step, mock, {steps}-step episode" + (", disk cache on" if cache else ""),
                              f"{lwm_ms:.3f} ms", f"{direct_ms:.3f} ms", f"{extra:.3f} ms", "< 1 ms",
                              "yes" if extra < 1.0 else "NO")
        rounds = [recording(args.steps) for _ in range(args.rounds)]
        recorded_ms, bare_ms = (statistics.median(r[k] for r in rounds) for k in (0, 1))
        table.add_row(f"RecordTrajectory(SimEnv).step, mock, {args.steps}-step episode", f"{recorded_ms:.3f} ms",
                      f"{bare_ms:.3f} ms", f"{recorded_ms - bare_ms:.3f} ms", "< 0.1 ms",
                      "yes" if recorded_ms - bare_ms < 0.1 else "NO")
    if not args.skip_embedded:
        with console.status("embedded throughput (llama.cpp, interleaved)..."):
            lwm_rate, direct_rate = embedded(args.reps, args.max_tokens)
        ratio = lwm_rate / direct_rate
        table.add_row(f"embedded SmolLM2 generation, {args.reps} interleaved runs", f"{lwm_rate:.1f} tok/s",
                      f"{direct_rate:.1f} tok/s", f"{ratio:.1%}", ">= 95%", "yes" if ratio >= 0.95 else "NO")
    console.print(table)


if __name__ == "__main__":
    main()
