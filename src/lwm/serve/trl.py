"""TRL's ``GRPOTrainer(environment_factory=...)`` against a served lwm environment (``lwm serve openenv``).

TRL makes one instance per rollout, shows its public methods to the policy as tools (their docstrings and
type hints become the tool schemas), calls ``reset`` between rollouts and ``get_reward`` once a rollout
ends. Each instance here is one OpenEnv session on the server, so switching between simulator and real
environment is switching the URL. The tools are the domain's action forms: keystrokes (terminal), a
tool call (mcp, search, swe, android) or a line of code (web, os). TRL needs a policy whose chat template
can carry tool calls; the packaged SmolLM2-135M's cannot, so ``with_tool_template`` gives its tokenizer
TRL's own ChatML tool-calling template (Qwen2.5's: the same ``<|im_start|>``/``<|im_end|>`` turns SmolLM2
was trained on, plus ``<tool_call>`` blocks TRL knows how to parse).
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from lwm.domains import get_domain


class ServedEnvironment:
    """One rollout's session on an OpenEnv server (``url``), optionally on a task (its checker is the reward)."""

    url = "http://127.0.0.1:8000"
    task: str | None = None

    def __init__(self) -> None:
        from openenv.core import GenericEnvClient

        self._client = GenericEnvClient(base_url=self.url).sync()
        self._client.connect()
        self._reward = 0.0
        self._done = False

    def reset(self, **kwargs: Any) -> str | None:
        self._reward, self._done = 0.0, False
        result = self._client.reset(**({"task": self.task} if self.task else {}))
        return result.observation["text"]

    def _step(self, action: Any) -> str:
        if self._done:
            return "The episode has ended."
        result = self._client.step({"action": action})
        self._reward = float(result.reward or 0.0)
        self._done = bool(result.done)
        return result.observation["text"]

    def get_reward(self) -> float:
        return self._reward

    def __del__(self) -> None:  # not a public method: TRL would show it to the policy as a tool
        client = getattr(self, "_client", None)
        if client is not None:
            client.close()


class _Keystrokes(ServedEnvironment):
    def type_keys(self, keystrokes: str) -> str:
        """Type keystrokes into the terminal and return the screen after them.

        Args:
            keystrokes: The keys to type; end a command with a newline to run it.
        """
        return self._step([{"keystrokes": keystrokes, "duration": 0.5}])


class _ToolCall(ServedEnvironment):
    def call_tool(self, name: str, arguments: dict) -> str:
        """Call one of the environment's tools and return its result.

        Args:
            name: The tool's name.
            arguments: The tool's arguments, as its input schema describes them.
        """
        return self._step({"name": name, "arguments": arguments})


def final_answer(self, answer: str) -> str:  # noqa: ANN001 - a method, attached to task classes
    """Finish the task with an answer (the task's checker scores it; for a state task, the environment).

    Args:
        answer: The answer to the task.
    """
    return self._step({"name": "final_answer", "arguments": {"answer": answer}})


class _Code(ServedEnvironment):
    def act(self, code: str) -> str:
        """Run one action and return what the environment shows after it.

        Args:
            code: The action as code, e.g. click('a12') on the web or a pyautogui call on the desktop.
        """
        return self._step(code)


def environment_factory(url: str, domain: str, task: str | None = None) -> type[ServedEnvironment]:
    """A class for ``GRPOTrainer(environment_factory=...)``: each instance one session on ``url``."""
    kind = get_domain(domain).action_kind
    bases = {"keystrokes": _Keystrokes, "tool_call": _ToolCall, "code": _Code}
    if kind not in bases:
        raise ValueError(f"no TRL tools for {domain}'s {kind} actions (have: {', '.join(bases)})")
    base = bases[kind]
    members: dict[str, Any] = {"url": url, "task": task, "__doc__": f"lwm {domain} served at {url}"}
    if task:
        members["final_answer"] = final_answer
    return type(f"Served{domain.capitalize()}", (base,), members)


def describe(env: type[ServedEnvironment]) -> str:
    """The tool schemas TRL builds from ``env``'s methods (what the policy is shown), as JSON."""
    from transformers.utils import get_json_schema

    methods = [m for n, m in inspect.getmembers(env, predicate=inspect.isfunction)  # TRL's own rule
               if not n.startswith("_") and n not in ("reset", "get_reward")]
    return json.dumps([get_json_schema(m) for m in methods], indent=2)


def with_tool_template(tokenizer: Any) -> Any:
    """``tokenizer`` able to render and parse tool calls, as ``GRPOTrainer(environment_factory=...)`` needs: a
    template that cannot carry them is replaced by TRL's ChatML tool template (read from TRL, not copied)."""
    from trl.chat_template_utils import qwen2_5_chat_template, supports_tool_calling

    if not supports_tool_calling(tokenizer):
        if "<|im_start|>" not in tokenizer.get_vocab():
            raise ValueError("this tokenizer's template cannot carry tool calls and it has no ChatML tokens to "
                             "use TRL's: give the policy a tool-calling chat template")
        tokenizer.chat_template = qwen2_5_chat_template
    return tokenizer
