"""The one episode loop: a policy acts in environments, in the simulator or the real ones, with the same code,
for ``lwm agent run|eval|train`` (a task per episode, rewarded by its checker) and for ``lwm collect`` (an
explorer or an LLM agent exploring, no task). Episodes of a batch advance in lockstep (one batched policy call
per step, environment steps in parallel threads), each recorded in the usual trajectory store.

The policy sees a system prompt (the task, the tools, the action format), then the environment's
observations as user messages and its own replies as assistant messages. A reply's last fenced block
(or the reply itself) is the action in the domain's format; ``{"name": "final_answer", "arguments":
{"answer": ...}}`` ends the episode. Anything that goes wrong in one episode (an action the domain
refuses three times in a row, a world model that times out, a checker that crashes) ends that episode
with a recorded error and a zero reward, never the batch.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import gymnasium as gym

from lwm.backends import Message
from lwm.data.store import TrajectoryStore
from lwm.domains import ActionError, get_domain
from lwm.domains.base import render_tools
from lwm.envs import SimEnv
from lwm.envs.control import ControlSpec
from lwm.rollout.checks import FINAL, check, final_answer
from lwm.rollout.task_env import Mode, close_env, make_task_env, recorder
from lwm.rollout.tasks import Task
from lwm.types import Action, Context
from lwm.worldmodel import WorldModel

FINAL_TOOL = {"name": FINAL, "description": "Finish the task and give your answer (for table tasks, the table).",
              "inputSchema": {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string"}}}}
OBSERVATION_CHARS = 1200
"""How much of each observation the policy reads (the trajectory keeps it whole)."""
MAX_INVALID = 3
FENCE = re.compile(r"```(?:json|python|py)?\s*\n(.*?)```", re.DOTALL)
EXPLORE = "explore the environment the way a real user would, with varied actions."
"""The instruction of an episode without a task (collection)."""


@dataclass(eq=False)
class Episode:
    """One episode as the loop runs it: what the policy has been told and has replied (``messages``, its history,
    held here once; the environment keeps the trajectory), and how it ended."""

    task: Task | None
    """The task, or None for an exploring episode (collection)."""
    mode: Mode = "real"
    domain: str = ""
    seed: int | None = None
    """The episode's seed: the environment's reset (and its control's perturbations), a policy's sampling."""
    messages: list[Message] = field(default_factory=list)
    observation: str = ""
    """The latest observation, whole (``messages`` hold what the policy reads of it)."""
    context: Context | None = None
    """The environment's context (tools, task), once it has started."""
    memory: dict[str, Any] = field(default_factory=dict)
    """What a policy keeps about this episode between its turns (an explorer's state)."""
    answer: str | None = None
    reward: float = 0.0
    error: str | None = None
    steps: int = 0
    policy_calls: int = 0
    world_model_calls: int = 0
    seconds: float = 0.0
    """Wall time of the lockstep batch the episode ran in (its episodes finish together)."""
    trajectory_id: str | None = None
    check_observation: str | None = None
    done: bool = False
    invalid: int = 0

    def __post_init__(self) -> None:
        self.domain = self.domain or (self.task.domain if self.task is not None else "")

    @property
    def instruction(self) -> str:
        if self.task is not None:
            return self.task.instruction
        return (self.context.task if self.context is not None else None) or EXPLORE


class Policy(Protocol):
    """Anything that acts: a model (any backend, or the one being trained), a scripted expert, an explorer."""

    name: str

    def act(self, episodes: Sequence[Episode]) -> list[str]:
        """One reply per episode (a batch: one call per lockstep step). An episode's conversation so far is its
        ``messages``, its latest observation whole its ``observation``, its task (None while exploring) its
        ``task``."""
        ...


def system_prompt(domain_name: str, instruction: str, tools: list[dict[str, Any]]) -> str:
    """What the policy is told: its environment, the instruction, the action format and the tools."""
    domain = get_domain(domain_name)
    if domain.action_kind == "tool_call":
        how = ('Reply with exactly one tool call as JSON in a ```json block: {"name": <tool>, "arguments": {...}}.')
    else:
        how = ("Reply with exactly one action in a ```json block: a list of keystrokes such as "
               f"{json.dumps(domain.example_action)}, or a final_answer call.")
    return "\n\n".join([
        f"You are an agent working in a {domain.title} environment.", f"Task: {instruction}", how,
        f'When the task is done, call {FINAL}: {{"name": "{FINAL}", "arguments": {{"answer": "..."}}}}.',
        "Tools:\n" + render_tools([*tools, FINAL_TOOL], compact=True)])


def observation_view(domain: str, observation: str) -> str:
    """The part of an observation the policy reads: a screen's last lines, any other text's beginning."""
    text = observation[-OBSERVATION_CHARS:] if get_domain(domain).screen else observation[:OBSERVATION_CHARS]
    return text or "(empty)"


def parse_reply(reply: str, domain: str) -> Action | str:
    """The action a reply asks for, or the final answer (a str); raises ActionError."""
    blocks = FENCE.findall(reply)
    text = (blocks[-1] if blocks else reply).strip()
    answer = final_answer(text)
    return answer if answer is not None else get_domain(domain).action_from_text(text)


def action_reply(content: Any, domain: str) -> str:
    """The reply that asks for ``content`` (an action in the domain's format), as ``parse_reply`` reads it."""
    return get_domain(domain).fenced(Action(content=content))


def play(episodes: Sequence[Episode], policy: Policy, open_env: Callable[[Episode], gym.Env], *,
         max_steps: int = 8, workers: int = 4) -> list[Episode]:
    """Run ``episodes`` with ``policy``, each in the environment ``open_env`` gives it (reset with the episode's
    seed), for at most ``max_steps`` policy turns or until the environment ends it. A task's final answer is
    stepped into its ``TaskEnv`` (the checker's reward); an exploring episode just ends there. Every episode
    is recorded by its environment's recorder, except a failed exploring one (a rerun collects it again)."""
    envs: list[gym.Env | None] = [None] * len(episodes)
    started = time.monotonic()

    def start(i: int) -> None:
        episode = episodes[i]
        try:
            envs[i] = env = open_env(episode)
            obs, _ = env.reset(seed=episode.seed)
            recorded = recorder(env)
            episode.trajectory_id = recorded.trajectory.id if recorded and recorded.trajectory else None
            episode.observation, episode.context = obs, env.unwrapped.context
            first = f"{episode.instruction}\n\nObservation:\n{observation_view(episode.domain, obs)}"
            told = system_prompt(episode.domain, episode.instruction, list(episode.context.tools))
            episode.messages = [{"role": "system", "content": told}, {"role": "user", "content": first}]
        except Exception as exc:  # noqa: BLE001 - one broken episode must not stop the batch
            episode.error, episode.done = f"environment did not start: {type(exc).__name__}: {exc}", True

    def advance(i: int, reply: str) -> None:
        episode, env = episodes[i], envs[i]
        assert env is not None
        episode.messages.append({"role": "assistant", "content": reply})
        try:
            parsed = parse_reply(reply, episode.domain)
        except ActionError as exc:
            episode.invalid += 1
            if episode.invalid >= MAX_INVALID:
                episode.error, episode.done = f"no valid action in {MAX_INVALID} replies: {exc}", True
                return
            episode.messages.append({"role": "user", "content": f"Error: invalid action: {exc}"})
            return
        episode.invalid = 0
        if isinstance(parsed, str):
            episode.answer, episode.done = parsed, True
            if episode.task is not None:
                _answer(episode, env)
            return
        try:
            obs, _, terminated, truncated, _ = env.step(parsed)
        except Exception as exc:  # noqa: BLE001 - a world model or environment failure ends this episode
            episode.error, episode.done = f"step failed: {type(exc).__name__}: {exc}", True
            return
        episode.steps += 1
        episode.world_model_calls += episode.mode == "sim"
        episode.observation, episode.done = obs, terminated or truncated
        episode.messages.append({"role": "user", "content": f"Observation:\n{observation_view(episode.domain, obs)}"})

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(start, range(len(episodes))))
        for _ in range(max_steps):
            active = [i for i, e in enumerate(episodes) if not e.done]
            if not active:
                break
            try:
                replies = policy.act([episodes[i] for i in active])
            except Exception as exc:  # noqa: BLE001 - a policy that fails ends the episodes it was acting in
                for i in active:
                    episodes[i].error, episodes[i].done = f"policy failed: {type(exc).__name__}: {exc}", True
                break
            for i in active:
                episodes[i].policy_calls += 1
            list(pool.map(advance, active, replies))
        list(pool.map(lambda i: _finish(episodes[i], envs[i]), range(len(episodes))))
    seconds = time.monotonic() - started
    for episode in episodes:
        episode.seconds = seconds
    return episodes


def _answer(episode: Episode, env: gym.Env) -> None:
    """A task's final answer, stepped into its ``TaskEnv``: the checker's reward (recorded with the episode)."""
    assert episode.task is not None
    try:
        _, episode.reward, _, _, info = env.step({"name": FINAL, "arguments": {"answer": episode.answer}})
    except Exception as exc:  # noqa: BLE001 - a check that cannot run gives 0, recorded
        episode.error, episode.reward = f"checker failed: {type(exc).__name__}: {exc}", 0.0
        return
    episode.error, episode.check_observation = info.get("error"), info.get("check_observation")
    episode.world_model_calls += episode.mode == "sim" and episode.task.check.kind == "state"


def _finish(episode: Episode, env: gym.Env | None) -> None:
    if env is None:
        return
    try:
        recorded = recorder(env)
        if recorded is not None and recorded.trajectory is not None and not recorded.stored \
                and (episode.task is not None or episode.error is None):
            recorded.finish({"reward": episode.reward, "answer": episode.answer, "error": episode.error}
                            if episode.task is not None else None)
    finally:
        close_env(env)


def run_episodes(tasks: Sequence[Task], policy: Policy, mode: Mode, *, world_model: WorldModel | None = None,
                 max_steps: int = 8, store: TrajectoryStore | None = None, workers: int = 4,
                 seed: int = 0, control: ControlSpec | str | Path | None = None) -> list[Episode]:
    """Run every task once with ``policy``, the world model or the real environment playing it (``mode``);
    episodes advance together, one policy batch per step. ``control`` perturbs every step of every episode (sim
    or real alike), each episode with a seed of its own (``seed`` + its index); the task's check reads the state
    unperturbed."""
    spec = ControlSpec.load(control) if isinstance(control, str | Path) else control
    provenance = {"policy": policy.name, "mode": mode,
                  **({"control": spec.model_dump(exclude_defaults=True)} if spec else {})}

    def open_env(episode: Episode) -> gym.Env:
        assert episode.task is not None
        if mode == "sim" and world_model is None:
            raise ValueError("mode sim needs a world model")
        return make_task_env(episode.task, mode, world_model=world_model, store=store, control=spec, record=True,
                             provenance={"task": episode.task.id, **provenance},
                             view=partial(observation_view, episode.domain))

    return play([Episode(task, mode, seed=seed + i) for i, task in enumerate(tasks)], policy, open_env,
                max_steps=max_steps, workers=workers)


def simulated_reward(task: Task, trajectory: Any, world_model: WorldModel) -> tuple[float, str]:
    """The state check of ``task`` answered by the world model after ``trajectory`` (a recorded episode, real
    or simulated): the simulator's reward for the same episode, and the observation it predicted."""
    env = SimEnv(world_model, task.domain, trajectory.context)
    env.reset(options={"trajectory": trajectory})
    value, seen = check(task, None, [], env)
    return value, seen or ""
