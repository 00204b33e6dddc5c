"""An LLM agent policy over any lwm backend, for users who have a good model.

It shows the model the domain's action format, the tools, the task and the recent turns, and takes
the last fenced block (or the whole reply) of its answer as the action. When the reply is not a valid
action, the domain's heuristic explorer acts instead, and the count of such fallbacks is kept.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from lwm.backends import GenerateConfig, load_backend
from lwm.domains import ActionError, get_domain
from lwm.domains.base import render_tools
from lwm.registry import get
from lwm.types import Context
from lwm.worldmodel import run_sync

FENCE = re.compile(r"```(?:json|python|py)?\s*\n(.*?)```", re.DOTALL)


class AgentPolicy:
    def __init__(self, domain: str, model: str, *, history: int = 4, temperature: float = 0.7,
                 max_tokens: int = 512, mistake_rate: float = 0.0, **backend_options: Any):
        self.domain = get_domain(domain)
        self.backend = load_backend(model, **backend_options)
        self.name = f"llm-agent:{self.backend.name}"
        self.history_size, self.turns = history, []
        self.config = GenerateConfig(temperature=temperature, max_tokens=max_tokens, seed=None)
        self.fallback = get("explorer", domain)(mistake_rate=mistake_rate)
        self.fallbacks = 0

    def start(self, rng: random.Random, context: Context, observation: str) -> None:
        self.context, self.turns = context, []
        self.config = self.config.model_copy(update={"seed": rng.randrange(2**31)})
        self.fallback.start(rng, context, observation)

    def system_prompt(self) -> str:
        example = json.dumps(self.domain.example_action) if self.domain.action_language == "json" \
            else self.domain.example_action
        task = self.context.task or "explore the environment the way a real user would, with varied actions."
        parts = [f"You are an agent operating a real {self.domain.title} environment.", f"Task: {task}",
                 f"Reply with exactly one action in a fenced ```{self.domain.action_language} block, for example:\n"
                 f"```{self.domain.action_language}\n{example}\n```"]
        if self.context.tools:
            parts.append("Tools:\n" + render_tools(self.context.tools, compact=True))
        return "\n\n".join(parts)

    def act(self, observation: str) -> Any:
        messages = [{"role": "system", "content": self.system_prompt()}]
        for past_obs, past_action in self.turns[-self.history_size:]:
            messages += [{"role": "user", "content": past_obs[-4000:]}, {"role": "assistant", "content": past_action}]
        messages.append({"role": "user", "content": observation[-6000:] or "(empty screen)"})
        reply = run_sync(self.backend.generate(messages, self.config)).text
        blocks = FENCE.findall(reply)
        text = (blocks[-1] if blocks else reply).strip()
        try:
            action = self.domain.action_from_text(text).content
        except ActionError:
            self.fallbacks += 1
            action = self.fallback.act(observation)
        rendered = action if isinstance(action, str) else json.dumps(action)
        self.turns.append((observation, f"```{self.domain.action_language}\n{rendered}\n```"))
        return action
