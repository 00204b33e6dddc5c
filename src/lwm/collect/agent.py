"""An LLM agent as a collection policy: the agent loop's prompt and reply parsing (``lwm.agent.loop``)
over any lwm backend, for users who have a good model.

It is the ``lwm agent`` policy driven one observation at a time by the collect runner: the same system
prompt (task, tools, action format), the same reading of a reply (its last fenced block). When a reply is
not a valid action (or is a final answer: collection has no task to finish), the domain's heuristic
explorer acts instead, and the count of such fallbacks is kept.
"""

from __future__ import annotations

import json
import random
from typing import Any

from lwm.agent.loop import observation_view, parse_reply, system_prompt
from lwm.agent.policy import ModelPolicy, make_policy
from lwm.domains import ActionError
from lwm.registry import get
from lwm.types import Context

EXPLORE = "explore the environment the way a real user would, with varied actions."


class AgentPolicy:
    def __init__(self, domain: str, model: str, *, history: int = 4, temperature: float = 0.7,
                 max_tokens: int = 512, mistake_rate: float = 0.0, **backend_options: Any):
        self.domain = domain
        self.model = make_policy(model, max_tokens=max_tokens, temperature=temperature, seed=None, **backend_options)
        self.name = f"llm-agent:{self.model.name}"
        self.history_size = history
        self.fallback = get("explorer", domain)(mistake_rate=mistake_rate)
        self.fallbacks = 0
        self.acted = 0
        self.messages: list[dict[str, str]] = []

    def start(self, rng: random.Random, context: Context, observation: str) -> None:
        self.messages = [{"role": "system", "content": system_prompt(self.domain, context.task or EXPLORE,
                                                                     context.tools)}]
        seed = rng.randrange(2**31)
        if isinstance(self.model, ModelPolicy):
            self.model.config = self.model.config.model_copy(update={"seed": seed})
        else:  # a model in this process samples from torch's generator
            import torch

            torch.manual_seed(seed)
        self.fallback.start(rng, context, observation)

    def act(self, observation: str) -> Any:
        self.messages.append({"role": "user", "content": observation_view(self.domain, observation)})
        recent = self.messages[0:1] + self.messages[1:][-(2 * self.history_size + 1):]
        reply = self.model.act([recent])[0]
        try:
            parsed = parse_reply(reply, self.domain)
            if isinstance(parsed, str):
                raise ActionError("a final answer ends nothing while collecting")
            action = parsed.content
            self.acted += 1
        except ActionError:
            self.fallbacks += 1
            action = self.fallback.act(observation)
        rendered = action if isinstance(action, str) else json.dumps(action)
        self.messages.append({"role": "assistant", "content": f"```json\n{rendered}\n```"})
        return action
