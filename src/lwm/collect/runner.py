"""Running explorers in real environments and recording what happens, in parallel and resumably.

Each episode is independent (its own environment, sandbox and seed), so episodes run in worker
processes; every step is written as it happens and a finished episode is appended to the store, so
a killed run is resumed by running the same command again: finished episodes are skipped.
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
import re
import signal
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

from lwm.data.store import MemoryStore, TrajectoryStore
from lwm.envs.registration import open_env
from lwm.registry import get
from lwm.rollout.cluster import node_id, remote_map
from lwm.runfolder import pin
from lwm.types import Trajectory

PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class EpisodeSpec:
    domain: str
    index: int
    seed: int
    max_steps: int
    out: str
    env_options: dict[str, Any] = field(default_factory=dict)
    mistake_rate: float = 0.15
    tag: str = ""
    """Tells apart several parts of one collection in the same domain (e.g. MCP servers)."""
    policy: str = "explorer"
    """``explorer`` (the domain's heuristic explorer), ``explorer:<name>`` (a registered explorer, e.g.
    ``terminal-sqlite3``) or ``agent:<model spec>`` (an LLM agent)."""
    policy_options: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.domain}{'-' + self.tag if self.tag else ''}-s{self.seed}-{self.index:05d}"

    @property
    def episode_seed(self) -> int:
        offset = int.from_bytes(self.tag.encode()[:4].ljust(4, b"\0"), "big") if self.tag else 0
        return self.seed * 1_000_003 + self.index + offset


@dataclass(frozen=True)
class EpisodeResult:
    id: str
    turns: int
    seconds: float
    error: str | None = None
    agent_actions: tuple[int, int] | None = None
    """An LLM agent's episode: (actions the agent chose, actions its explorer chose when a reply was no action)."""
    node: str | None = None
    """The Ray node that ran it (``executor="ray"``)."""


def episode_policy(spec: EpisodeSpec) -> Any:
    """The episode's actor: the domain's heuristic explorer, or an LLM agent (``agent:<model spec>``)."""
    from lwm.collect.policies import AgentPolicy, ExplorerPolicy

    if spec.policy.startswith("agent:"):
        return AgentPolicy(spec.domain, spec.policy.removeprefix("agent:"), mistake_rate=spec.mistake_rate,
                           **spec.policy_options)
    name = spec.policy.removeprefix("explorer:") if spec.policy.startswith("explorer:") else spec.domain
    return ExplorerPolicy(get("explorer", name), mistake_rate=spec.mistake_rate)


def collect_episode(spec: EpisodeSpec, store: TrajectoryStore | None = None) -> EpisodeResult:
    """One episode through the agent loop (``lwm.rollout.loop.play``): a fresh real environment, a policy, at
    most ``max_steps`` steps, recorded into the collection (or into ``store``). Any failure (building the env or
    the policy included) ends this episode with an error, never the collection; a failed episode is not stored."""
    from lwm.rollout.loop import Episode, play

    started = time.monotonic()
    try:
        policy = episode_policy(spec)
        store = store if store is not None else TrajectoryStore(spec.out)
        provenance = {"policy": policy.name, "seed": spec.seed, "episode": spec.index, "lwm": version("lwm"),
                      **({"source": policy.source} if getattr(policy, "source", None) else {})}
        env = open_env(spec.domain, env_options=spec.env_options, store=store, max_turns=spec.max_steps,
                       trajectory_id=spec.id, provenance=provenance)
        (episode,) = play([Episode(None, domain=spec.domain, seed=spec.episode_seed)], policy, lambda _: env,
                          max_steps=spec.max_steps, workers=1)  # play closes the environment
        store.close()
        if episode.error is not None:
            return EpisodeResult(spec.id, 0, time.monotonic() - started, episode.error)
        return EpisodeResult(spec.id, episode.steps, time.monotonic() - started,
                             agent_actions=(policy.acted, policy.fallbacks) if hasattr(policy, "acted") else None)
    except Exception as exc:  # one broken episode must not stop the collection
        return EpisodeResult(spec.id, 0, time.monotonic() - started, f"{type(exc).__name__}: {exc}")


class EnvironmentStartError(RuntimeError):
    """The environment does not start with these options (say which, and why)."""


def preflight(domain: str, options: dict[str, Any]) -> None:
    """Start the environment once before the episodes, so a mistake in its options (an unknown preset, a
    missing project, no server) is one clear error, not a failed episode per episode."""
    env = None
    try:
        env = get("env", domain)(**options)
        env.reset(seed=0)
    except Exception as exc:  # noqa: BLE001 - any failure to start is reported the same way
        shown = " ".join(f"{k}={v}" for k, v in options.items()) or "no options"
        raise EnvironmentStartError(f"cannot start the {domain} environment ({shown}): "
                                    f"{type(exc).__name__}: {exc}") from None
    finally:
        if env is not None:
            env.close()


def plan(domain: str, episodes: int, max_steps: int, seed: int, out: str | Path,
         env_options: dict[str, Any] | None = None, mistake_rate: float = 0.15, tag: str = "",
         policy: str = "explorer", policy_options: dict[str, Any] | None = None) -> tuple[list[EpisodeSpec], int]:
    """The episodes still to run (finished ones in ``out`` are skipped) and how many were skipped.

    The collection's settings are pinned in ``out/run.json``: resuming with another policy, seed, step
    limit or environment options would mix two collections, so it raises ``SettingsChanged``."""
    if max_steps < 1 or episodes < 1:
        raise ValueError(f"--episodes and --max-steps must be at least 1 (got {episodes} and {max_steps}): "
                         "nothing would be recorded")
    done = TrajectoryStore(out).finished_ids()
    specs = [EpisodeSpec(domain, i, seed, max_steps, str(out), env_options or {}, mistake_rate, tag, policy,
                         policy_options or {}) for i in range(episodes)]
    todo = [s for s in specs if s.id not in done]
    # this stage's rows under any seed: another --seed into the same folder would mix two collections
    stage = re.compile(re.escape(f"{domain}{'-' + tag if tag else ''}") + r"-s\d+-\d{5}$")
    pin(Path(out), f"collect {domain}{' ' + tag if tag else ''}",
        {"max_steps": max_steps, "seed": seed, "env_options": env_options or {}, "mistake_rate": mistake_rate,
         "policy": policy, "policy_options": policy_options or {}},
        has_rows=any(stage.match(i) for i in done), way_out="use a new --out")
    return todo, len(specs) - len(todo)


def run(specs: list[EpisodeSpec], workers: int = 1,
        on_result: Callable[[EpisodeResult], None] | None = None, executor: str = "process") -> list[EpisodeResult]:
    """Run episodes in ``workers`` processes (in this process when 1), or as Ray tasks, reporting each as it ends.

    With ``executor="ray"`` episodes are Ray tasks on the cluster named by ``RAY_ADDRESS`` (or a local one
    with ``workers`` CPUs), each node running at most its ``lwm_sandbox`` slots at once (``lwm.rollout.cluster``);
    their trajectories come back here and are written into ``out`` once, so no folder need be shared.
    """
    results: list[EpisodeResult] = []

    def done(result: EpisodeResult) -> None:
        results.append(result)
        if on_result:
            on_result(result)

    if executor == "ray":
        _run_ray(specs, workers, done)
        return results
    if executor != "process":
        raise ValueError(f"unknown executor {executor!r}; use process or ray")

    if workers <= 1:
        for spec in specs:
            done(collect_episode(spec))
        return results
    with ProcessPoolExecutor(max_workers=workers, initializer=die_with_parent) as pool:
        for future in as_completed([pool.submit(collect_episode, spec) for spec in specs]):
            done(future.result())
    return results


def die_with_parent() -> None:
    """A worker ends when the collection process dies, even by SIGKILL: a stray worker would keep appending
    episodes that a rerun also runs (Linux's PR_SET_PDEATHSIG; elsewhere nothing is set)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() == 1:  # the parent died before the flag was set
            os._exit(1)


def collect_remote(spec: EpisodeSpec) -> tuple[EpisodeResult, list[Trajectory]]:
    """One episode as a Ray task, on whichever node runs it: its trajectory kept in memory there and handed back
    for the caller to store (no folder shared between nodes; a retried task stores nothing twice)."""
    kept = MemoryStore()
    result = collect_episode(spec, kept)
    return dataclasses.replace(result, node=node_id()), kept.trajectories


def _run_ray(specs: list[EpisodeSpec], workers: int, done: Callable[[EpisodeResult], None]) -> None:
    """Episodes as Ray tasks, at most a node's ``lwm_sandbox`` slots at once on each node; every trajectory is
    written here, once, into the collection's store."""
    stores = {out: TrajectoryStore(out) for out in {spec.out for spec in specs}}
    try:
        for spec, outcome in remote_map(collect_remote, specs, workers=workers, sandboxed=True):
            if isinstance(outcome, BaseException):
                done(EpisodeResult(spec.id, 0, 0.0, f"{type(outcome).__name__}: {outcome}"))
                continue
            result, trajectories = outcome
            for trajectory in trajectories:
                stores[spec.out].append_once(trajectory)
            done(result)
    finally:
        for store in stores.values():
            store.close()
