"""Collection policies as agent-loop policies (``lwm.rollout.loop.Policy``), so ``lwm collect`` runs its episodes
through the same loop as ``lwm agent``:

- ``ExplorerPolicy``: a domain's heuristic explorer (one per episode, seeded by it) acting on each latest
  observation whole; its action written as the reply an agent would give.
- ``AgentPolicy``: an LLM agent (any lwm model spec) that sees the loop's conversation (its last ``history``
  turns). When a reply is not a valid action (or is a final answer: collection has no task to finish), the
  domain's explorer acts instead, and the count of such fallbacks is kept.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from lwm.domains import ActionError
from lwm.registry import get
from lwm.rollout.loop import Episode, action_reply, parse_reply
from lwm.rollout.policies import ModelPolicy, model_policy


class ExplorerPolicy:
    def __init__(self, explorer: type, mistake_rate: float = 0.15):
        self.explorer, self.mistake_rate = explorer, mistake_rate
        probe = explorer(mistake_rate=mistake_rate)  # some explorers name themselves when made
        self.name: str = probe.name
        self.source: str | None = getattr(probe, "source", None)

    def act(self, episodes: Sequence[Episode]) -> list[str]:
        return [action_reply(self.action(e), e.domain) for e in episodes]

    def action(self, episode: Episode) -> Any:
        """The episode's explorer's next action (content in the domain's format)."""
        explorer = episode.memory.get("explorer")
        if explorer is None:
            explorer = episode.memory["explorer"] = self.explorer(mistake_rate=self.mistake_rate)
            explorer.start(random.Random(episode.seed), episode.context, episode.observation)
        return explorer.act(episode.observation)


class AgentPolicy:
    def __init__(self, domain: str, model: str, *, history: int = 4, temperature: float = 0.7,
                 max_tokens: int = 512, mistake_rate: float = 0.0, **backend_options: Any):
        self.domain = domain
        self.model = model_policy(model, max_tokens=max_tokens, temperature=temperature, seed=None, **backend_options)
        self.name = f"llm-agent:{self.model.name}"
        self.history_size = history
        self.fallback = ExplorerPolicy(get("explorer", domain), mistake_rate)
        self.fallbacks = 0
        self.acted = 0

    def act(self, episodes: Sequence[Episode]) -> list[str]:
        return [self._reply(e) for e in episodes]

    def _seed(self, episode: Episode) -> None:
        """Sample reproducibly per episode: the model's seed drawn from the episode's."""
        seed = random.Random(episode.seed).randrange(2**31)
        if isinstance(self.model, ModelPolicy):
            self.model.config = self.model.config.model_copy(update={"seed": seed})
        else:  # a model in this process samples from torch's generator
            import torch

            torch.manual_seed(seed)

    def _reply(self, episode: Episode) -> str:
        if not episode.memory.get("seeded"):
            self._seed(episode)
            episode.memory["seeded"] = True
        recent = episode.messages[0:1] + episode.messages[1:][-(2 * self.history_size + 1):]
        reply = self.model.reply([recent])[0]
        try:
            parsed = parse_reply(reply, self.domain)
            if isinstance(parsed, str):
                raise ActionError("a final answer ends nothing while collecting")
            self.acted += 1
            return action_reply(parsed.content, self.domain)
        except ActionError:
            self.fallbacks += 1
            return self.fallback.act([episode])[0]
