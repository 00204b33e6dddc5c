"""The one agent loop: a policy acts with a domain's tools on a task, in the simulator or the real
environment, with the same code; episodes of a batch advance in lockstep (one batched policy call
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
import shutil
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from lwm.agent.checks import FINAL, check, final_answer
from lwm.agent.tasks import Task, task_context
from lwm.backends import Backend, GenerateConfig, Message
from lwm.data.store import TrajectoryStore
from lwm.domains import ActionError, get_domain
from lwm.domains.base import render_tools
from lwm.envs import RecordTrajectory, SimEnv, TextEnv
from lwm.envs.control import ControlSpec, apply_control
from lwm.model_options import ModelOptions
from lwm.registry import get
from lwm.types import Action
from lwm.worldmodel import WorldModel

EnvKind = Literal["sim", "real"]
FINAL_TOOL = {"name": FINAL, "description": "Finish the task and give your answer (for table tasks, the table).",
              "inputSchema": {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string"}}}}
OBSERVATION_CHARS = 1200
"""How much of each observation the policy reads (the trajectory keeps it whole)."""
WORLD_MODEL_TOKENS = 512
"""Most tokens the world model writes per simulated observation: the policy reads only the first or last
``OBSERVATION_CHARS`` characters of it (~300-400 tokens), so more is time spent on text nobody reads."""
MAX_INVALID = 3
FENCE = re.compile(r"```(?:json|python|py)?\s*\n(.*?)```", re.DOTALL)


class Policy(Protocol):
    name: str

    def act(self, conversations: Sequence[list[Message]]) -> list[str]:
        """One reply per conversation (a batch: one call per lockstep step)."""
        ...


@dataclass
class Episode:
    task: Task
    env: EnvKind
    messages: list[Message] = field(default_factory=list)
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


def system_prompt(domain_name: str, instruction: str, tools: list[dict[str, Any]]) -> str:
    """What the policy is told: its environment, the instruction, the action format and the tools."""
    domain = get_domain(domain_name)
    if domain.action_language == "json" and domain_name != "terminal":
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


def sim_world_model(model: str | Backend, max_tokens: int = WORLD_MODEL_TOKENS) -> WorldModel:
    """The world model that plays the environment in ``--env sim`` (a spec or a backend), its answers capped
    at ``max_tokens``."""
    if not isinstance(model, str):
        return WorldModel(model, config=GenerateConfig(max_tokens=max_tokens))
    return ModelOptions(model, max_tokens=max_tokens).world_model()


def parse_reply(reply: str, domain: str) -> Action | str:
    """The action a reply asks for, or the final answer (a str); raises ActionError."""
    blocks = FENCE.findall(reply)
    text = (blocks[-1] if blocks else reply).strip()
    answer = final_answer(text)
    return answer if answer is not None else get_domain(domain).action_from_text(text)


def make_env(task: Task, env: EnvKind, world_model: WorldModel | None = None) -> TextEnv:
    """The task's environment: the world model playing it (``sim``) or the real one (``real``)."""
    context = task_context(task)
    if task.files:
        context = context.model_copy(update={"extra": {**context.extra, "files in the home folder": task.files}})
    if env == "sim":
        if world_model is None:
            raise ValueError("--env sim needs a world model")
        return SimEnv(world_model, task.domain, context)
    options = dict(task.env_options)
    if task.domain == "terminal":
        home = Path(tempfile.mkdtemp(prefix="lwm-task-"))
        for name, text in task.files.items():
            (home / name).parent.mkdir(parents=True, exist_ok=True)
            (home / name).write_text(text)
        options["workdir"] = home
    real = get("env", task.domain)(context=task.context, **options)
    real._task_home = options.get("workdir")  # removed with the episode (close_env)
    return real


def close_env(env: Any) -> None:
    try:
        env.close()
    finally:
        home = getattr(env.unwrapped, "_task_home", None)
        if home:
            shutil.rmtree(home, ignore_errors=True)


def reward(episode: Episode, env: TextEnv) -> float:
    """The task's checker on this episode (``lwm.agent.checks``), on the observations as the policy saw them."""
    shown = [m["content"] for m in episode.messages[1:] if m["role"] == "user"]
    value, episode.check_observation = check(episode.task, episode.answer, shown, env)
    return value


def _tools(env: TextEnv) -> list[dict[str, Any]]:
    return list(env.unwrapped.context.tools)


def run_episodes(tasks: Sequence[Task], policy: Policy, env: EnvKind, *, world_model: WorldModel | None = None,
                 max_steps: int = 8, store: TrajectoryStore | None = None, workers: int = 4,
                 seed: int = 0, control: ControlSpec | str | Path | None = None) -> list[Episode]:
    """Run every task once with ``policy`` in ``env``; episodes advance together, one policy batch per step.
    ``control`` perturbs every step of every episode (sim or real alike), each episode with a seed of its own
    (``seed`` + its index); the task's check reads the state unperturbed."""
    spec = ControlSpec.load(control) if isinstance(control, str | Path) else control
    episodes = [Episode(task, env) for task in tasks]
    envs: list[RecordTrajectory | None] = [None] * len(tasks)
    started = time.monotonic()

    def start(i: int) -> None:
        episode = episodes[i]
        try:
            recorded = RecordTrajectory(apply_control(make_env(episode.task, env, world_model), spec), store,
                                        provenance={"task": episode.task.id, "policy": policy.name, "env": env,
                                                    **({"control": spec.model_dump(exclude_defaults=True)}
                                                       if spec else {})})
            envs[i] = recorded
            obs, _ = recorded.reset(seed=seed + i)
            episode.trajectory_id = recorded.trajectory.id if recorded.trajectory else None
            first = f"{episode.task.instruction}\n\nObservation:\n{observation_view(episode.task.domain, obs)}"
            told = system_prompt(episode.task.domain, episode.task.instruction, _tools(recorded))
            episode.messages = [{"role": "system", "content": told}, {"role": "user", "content": first}]
        except Exception as exc:  # noqa: BLE001 - one broken episode must not stop the batch
            episode.error, episode.done = f"environment did not start: {type(exc).__name__}: {exc}", True

    def advance(i: int, reply: str) -> None:
        episode, recorded = episodes[i], envs[i]
        assert recorded is not None
        episode.messages.append({"role": "assistant", "content": reply})
        try:
            parsed = parse_reply(reply, episode.task.domain)
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
            return
        try:
            obs, *_ = recorded.step(parsed)
        except Exception as exc:  # noqa: BLE001 - a world model or environment failure ends this episode
            episode.error, episode.done = f"step failed: {type(exc).__name__}: {exc}", True
            return
        episode.steps += 1
        episode.world_model_calls += env == "sim"
        episode.messages.append({"role": "user",
                                 "content": f"Observation:\n{observation_view(episode.task.domain, obs)}"})

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(start, range(len(tasks))))
        for _ in range(max_steps):
            active = [i for i, e in enumerate(episodes) if not e.done]
            if not active:
                break
            try:
                replies = policy.act([episodes[i].messages for i in active])
            except Exception as exc:  # noqa: BLE001 - a policy that fails ends the episodes it was acting in
                for i in active:
                    episodes[i].error, episodes[i].done = f"policy failed: {type(exc).__name__}: {exc}", True
                break
            for i in active:
                episodes[i].policy_calls += 1
            list(pool.map(advance, active, replies))
        list(pool.map(lambda i: _finish(episodes[i], envs[i], store), range(len(tasks))))
    seconds = time.monotonic() - started
    for episode in episodes:
        episode.seconds = seconds
    return episodes


def _finish(episode: Episode, recorded: RecordTrajectory | None, store: TrajectoryStore | None) -> None:
    if recorded is None:
        return
    try:
        if episode.error is None:
            try:
                episode.reward = reward(episode, recorded)
                episode.world_model_calls += episode.env == "sim" and episode.task.check.kind == "state"
            except Exception as exc:  # noqa: BLE001 - a checker that crashes gives 0, recorded
                episode.error, episode.reward = f"checker failed: {type(exc).__name__}: {exc}", 0.0
        if recorded.trajectory is not None:
            recorded.finish({"reward": episode.reward, "answer": episode.answer, "error": episode.error})
    finally:
        close_env(recorded)



def simulated_reward(task: Task, trajectory: Any, world_model: WorldModel) -> tuple[float, str]:
    """The state check of ``task`` answered by the world model after ``trajectory`` (a recorded episode, real
    or simulated): the simulator's reward for the same episode, and the observation it predicted."""
    episode = Episode(task, "sim")
    env = SimEnv(world_model, task.domain, trajectory.context)
    env.reset(options={"trajectory": trajectory})
    return reward(episode, env), episode.check_observation or ""
