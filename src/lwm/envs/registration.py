"""Gymnasium registration: ``gymnasium.make("lwm/Terminal-v0")`` (the default world model, lwm-mini; ``model=`` names
another, e.g. ``model="embedded:smollm2"``) for every domain,
simulated, and ``lwm/Terminal-real-v0`` for the real environments, after ``import lwm``.

``make_vec`` with ``vectorization_mode="vector_entry_point"`` gives ``SimVectorEnv``: one world model shared
by every sub-environment, their steps sent together (so a serving engine batches them) instead of one
after another. ``store=`` records every episode in a trajectory store (``RecordTrajectory``), ``max_turns`` truncates an
episode inside the recorder (so a truncated episode is recorded too), and ``control=`` (a spec or its
YAML file) perturbs the steps and gives the world model a world bible (``lwm.envs.control``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.vector.utils import iterate
from gymnasium.wrappers import TimeLimit

from lwm.backends import DEFAULT_SPEC
from lwm.data.store import TrajectoryStore
from lwm.envs.control import Control, ControlSpec, apply_control
from lwm.envs.record import RecordTrajectory
from lwm.envs.sim import SimEnv
from lwm.model_options import world_model as get_world_model
from lwm.registry import get, is_builtin, names, registered
from lwm.types import Context
from lwm.worldmodel import WorldModel


def gym_names() -> dict[str, str]:
    """Domain -> the name in its Gymnasium ids (``lwm/<Name>-v0``), for lwm's domains and plugins' alike."""
    return {domain: get("domain", domain).gym_name() for domain in names("domain")}


def wrap(env: gym.Env, store: str | Path | TrajectoryStore | None = None, max_turns: int | None = None,
         control: Control | ControlSpec | str | Path | None = None, *, record: bool = False,
         provenance: dict[str, Any] | None = None, trajectory_id: str | None = None,
         save: str | Path | None = None) -> gym.Env:
    """``env`` with ``control`` around its steps, truncated after ``max_turns`` inside the recorder (so a
    truncated episode is recorded too), recorded into ``store`` (or kept in memory with ``record``) as
    ``trajectory_id`` with ``provenance``, saved whole to the file ``save`` after every step (``lwm shell``).
    Every environment's stack is built here (through ``open_env``)."""
    env = apply_control(env, control)
    if max_turns:
        env = TimeLimit(env, max_episode_steps=max_turns)
    if record or save or (store is not None and store != ""):
        if isinstance(store, str | Path):
            store = TrajectoryStore(store)
        env = RecordTrajectory(env, store, save=save, provenance=provenance, trajectory_id=trajectory_id)
    return env


def open_env(domain: str, world_model: WorldModel | None = None, *, context: Context | dict[str, Any] | None = None,
             env_options: dict[str, Any] | None = None, render_mode: str | None = None,
             store: str | Path | TrajectoryStore | None = None, max_turns: int | None = None,
             control: Control | ControlSpec | str | Path | None = None, record: bool = False,
             provenance: dict[str, Any] | None = None, trajectory_id: str | None = None,
             save: str | Path | None = None) -> gym.Env:
    """The one way an lwm environment is made: ``domain`` simulated by ``world_model``, or with none the real one
    (``env_options`` as ``lwm collect --env-option``), starting from ``context``, inside ``wrap`` (control,
    turn limit, recording). The gym ids, served sessions, task episodes and collection all open theirs here."""
    if isinstance(context, dict):
        context = Context.model_validate(context)
    if world_model is not None:
        env: gym.Env = SimEnv(world_model, domain, context, render_mode=render_mode)
    else:
        options = {**(env_options or {}), **({"context": context} if context is not None else {}),
                   **({"render_mode": render_mode} if render_mode is not None else {})}
        env = get("env", domain)(**options)
    return wrap(env, store, max_turns, control, record=record, provenance=provenance, trajectory_id=trajectory_id,
                save=save)


def make_sim(domain: str, model: str = DEFAULT_SPEC, *, world_model: WorldModel | None = None,
             context: Context | dict[str, Any] | None = None, store: str | Path | None = None,
             max_turns: int | None = None, control: ControlSpec | str | Path | None = None, max_tokens: int = 512,
             temperature: float = 0.0, base_url: str | None = None, api_key: str | None = None,
             render_mode: str | None = None) -> gym.Env:
    """A simulated ``domain``: ``model`` (a spec) or a ready ``world_model`` plays the environment."""
    if world_model is None:
        world_model = get_world_model(model, base_url=base_url, api_key=api_key, temperature=temperature,
                                      max_tokens=max_tokens)
    return open_env(domain, world_model, context=context, render_mode=render_mode, store=store,
                    max_turns=max_turns, control=control)


def make_real(domain: str, *, store: str | Path | None = None, max_turns: int | None = None,
              control: ControlSpec | str | Path | None = None, **options: Any) -> gym.Env:
    """The real ``domain`` (sandboxed where it runs programs); ``options`` as ``lwm collect --env-option``."""
    return open_env(domain, env_options=options, store=store, max_turns=max_turns, control=control)


class _Prefetched(gym.Wrapper):
    """Hands back a step result computed ahead (by ``SimVectorEnv``), else steps as usual."""

    result: tuple[Any, ...] | None = None

    def step(self, action: Any) -> tuple[Any, ...]:
        if self.result is not None:
            result, self.result = self.result, None
            return result
        return self.env.step(action)


class SimVectorEnv(SyncVectorEnv):
    """Simulated sub-environments sharing one world model, stepped concurrently (one thread each).

    Gymnasium's ``SyncVectorEnv`` semantics (autoreset, infos, spaces) are kept: the sub-steps are run
    together first, then ``SyncVectorEnv.step`` collects their results in order."""

    def __init__(self, domain: str, num_envs: int = 1, model: str = DEFAULT_SPEC, *,
                 world_model: WorldModel | None = None, max_tokens: int = 512, temperature: float = 0.0,
                 base_url: str | None = None, api_key: str | None = None, **options: Any):
        self.world_model = world_model or get_world_model(model, base_url=base_url, api_key=api_key,
                                                          temperature=temperature, max_tokens=max_tokens,
                                                          concurrency=num_envs)
        fns: Sequence[Callable[[], gym.Env]] = [
            lambda: _Prefetched(make_sim(domain, world_model=self.world_model, **options)) for _ in range(num_envs)]
        super().__init__(fns)
        self._pool = ThreadPoolExecutor(max_workers=num_envs, thread_name_prefix="lwm-vec")

    def step(self, actions: Any) -> tuple[Any, ...]:
        chosen = list(iterate(self.action_space, actions))
        resetting = self._autoreset_envs if self.autoreset_mode == AutoresetMode.NEXT_STEP else [False] * self.num_envs
        todo = [i for i in range(self.num_envs) if not resetting[i]]

        def run(i: int) -> None:
            self.envs[i].result = self.envs[i].env.step(chosen[i])

        list(self._pool.map(run, todo))
        return super().step(actions)

    def close_extras(self, **kwargs: Any) -> None:
        super().close_extras(**kwargs)
        self._pool.shutdown(wait=False)


def has_real_env(domain: str) -> bool:
    """Whether ``domain`` has a real environment: each of lwm's own does (lwm.envs.real, checked by a test,
    not imported here: `import lwm` stays light); a plugin's only if the plugin registered an ``env`` too."""
    return is_builtin(get("domain", domain)) or registered("env", domain)


def register_envs() -> None:
    """Register ``lwm/<Name>-v0`` (simulated) for every domain, plugins' included (``import lwm`` loads the
    ``lwm.plugins`` entry points), and ``lwm/<Name>-real-v0`` for each that has a real environment."""
    for domain, name in gym_names().items():
        if f"lwm/{name}-v0" in gym.registry:
            continue
        gym.register(f"lwm/{name}-v0", entry_point=make_sim, kwargs={"domain": domain},
                     vector_entry_point=SimVectorEnv, disable_env_checker=False)
        if has_real_env(domain):
            gym.register(f"lwm/{name}-real-v0", entry_point=make_real, kwargs={"domain": domain})
    if "lwm/Task-v0" not in gym.registry:  # a suite's task, its checker the reward (lwm.rollout.task_env)
        gym.register("lwm/Task-v0", entry_point="lwm.rollout.task_env:make_task_env")
