"""lwm's task suites as a verifiers taskset (`vf-eval lwm-tasks ...`).

An episode is played against an `lwm serve openenv` server, simulated (a world model answers) or `--real`:
the policy is first told what lwm's own agents are told (the task, the action format, the tools: the reset's
`info.prompt`) with the first observation; each reply is one action in the domain's format (a ```json block
or bare JSON, as lwm's agents write it); the server's observation comes back as the next user turn; the task's
`final_answer` call ends the episode with the reward of the task's own checker, recorded as `lwm_reward`.
`LwmEnv` is verifiers' OpenEnv env with its `run()` written for lwm's actions (verifiers 0.4.0's own
`OpenEnvEnv.run()` reads `GenericEnvClient._base_url`, which openenv-core 0.3.0 no longer has, and asks the
policy for OpenEnv's raw `{"action": ...}` wrapper). The policy is a plain chat (`LwmChat`, verifiers' null
harness: no tools of its own; the environment is the server) run in the local runtime: it runs no code, so
it needs no sandbox (`--env.player.runtime.type` changes that).

This package runs in verifiers' environment, not lwm's: it imports no lwm code and talks HTTP/WebSocket only
(verifiers 0.4 pins an older `mcp` than lwm's). Task ids are lwm's (`lwm agent tasks list`, `lwm agent tasks
show ID`); one server serves one domain, so pick tasks of the domain it was started with.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from typing import Any, Self

from pydantic import Field, model_validator
from verifiers.v1 import AgentConfig, Env, EnvConfig, TasksetConfig
from verifiers.v1 import Taskset as _Taskset
from verifiers.v1.harnesses.null import NullHarness
from verifiers.v1.runtimes.subprocess import SubprocessConfig
from verifiers.v1.tasksets.openenv import OpenEnvData, OpenEnvTask


def _use_this_venvs_uv() -> None:
    """verifiers' local runtime prepares its scripts with `uv` and, where none is on PATH, fetches one with
    `curl https://astral.sh/... | sh`: this package depends on PyPI's `uv`, and its folder goes first on PATH so
    that one is found; uv never downloads a Python of its own (it uses this one), and where the script's wheels
    were fetched ahead (`python -m lwm_tasks.offline`) it resolves from them alone, so a run needs no network."""
    here = os.path.join(sys.prefix, "bin")
    if os.path.exists(os.path.join(here, "uv")) and here not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = here + os.pathsep + os.environ.get("PATH", "")
    os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")
    index = os.path.join(sys.prefix, "lwm-script-wheels", "simple")
    if os.path.isdir(index):
        os.environ.setdefault("UV_DEFAULT_INDEX", "file://" + index)


_use_this_venvs_uv()
FENCE = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)


class LwmTasksConfig(TasksetConfig):
    base_url: str = "http://127.0.0.1:8000"
    """The `lwm serve openenv` server (add `/t/<token>` or run it on loopback)."""
    tasks: list[str] = Field(default_factory=list)
    """lwm task ids, e.g. terminal/count-lines-0004 (`lwm agent tasks list`); all of one domain."""
    seeds: list[int] = Field(default_factory=lambda: [0])
    """Each task is played once per seed (the seed reaches the server's reset)."""

    @model_validator(mode="after")
    def _one_domain(self) -> Self:
        domains = {task.split("/", 1)[0] for task in self.tasks}
        if len(domains) > 1:
            raise ValueError(f"one server serves one domain; these tasks are of {sorted(domains)}")
        return self


class LwmTaskset(_Taskset[OpenEnvTask, LwmTasksConfig]):
    """One verifiers task per (lwm task, seed), each an OpenEnv reset with that task."""

    def load(self) -> Iterator[OpenEnvTask]:
        if not self.config.tasks:  # checked here: verifiers builds the config before the flags are applied
            raise ValueError("name the lwm tasks to play: --env.taskset.tasks '[\"terminal/count-lines-0004\"]'")
        for task in self.config.tasks:
            for seed in self.config.seeds:
                data = OpenEnvData(name=f"{task}#{seed}", prompt=None, env=None, base_url=self.config.base_url,
                                   use_docker=False, provider_kwargs={}, reset={"task": task, "seed": seed})
                yield OpenEnvTask(data, self.config.task)


def action_of(reply: str) -> Any:
    """The action a reply asks for: its first ```json block (else the whole reply) as JSON, unwrapped from an
    OpenEnv `{"action": ...}` if the policy wrote one; text that is not JSON goes as text (the server says
    what is wrong with it)."""
    blocks = FENCE.findall(reply)
    text = (blocks[0] if blocks else reply).strip()
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value["action"] if isinstance(value, dict) and set(value) == {"action"} else value


def first_turn(observation: dict[str, Any]) -> str:
    info = observation.get("info") or {}
    told = info.get("prompt") or info.get("instruction") or ""
    return f"{told}\n\nObservation:\n{observation.get('text') or '(empty)'}".strip()


class LwmChat(NullHarness):
    """The policy as a plain chat: lwm's task prompt and observations in, one action per reply out."""


class LwmEnvConfig(EnvConfig):
    player: AgentConfig = AgentConfig(runtime=SubprocessConfig())


class LwmEnv(Env[LwmEnvConfig]):
    """One episode of one lwm task on the server; see the module docstring."""

    async def run(self, task, agents):
        from openenv import GenericEnvClient

        data, total = task.data, 0.0
        async with GenericEnvClient(base_url=data.base_url) as client:
            result = await client.reset(**data.reset)
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn(first_turn(result.observation))
                while not segment.terminated and not result.done:
                    reply = (segment.last_reply or "").strip()
                    if not reply:  # nothing to send: end the run rather than replay the same observation
                        interaction.trace.stop("empty_action")
                        break
                    result = await client.step({"action": action_of(reply)})
                    total += result.reward or 0.0
                    if result.done:
                        break
                    segment = await interaction.turn(result.observation.get("text") or "(empty)")
        interaction.trace.record_reward("lwm_reward", total)


__all__ = ["LwmChat", "LwmEnv", "LwmTaskset", "LwmTasksConfig"]
