"""Policies for the episode loop (``lwm.rollout.loop.Policy``): any lwm model spec (``model_policy``) and a
scripted list of replies. Model policies reply to conversations (``reply``); ``act`` hands them each episode's
messages. The task suites' scripted experts live above, in ``lwm.agent.policy``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from lwm.backends import GenerateConfig, Message, load_backend
from lwm.rollout.loop import Episode
from lwm.worldmodel import run_sync


class ConversationPolicy:
    """A policy that is a model: it replies to each episode's conversation as it stands."""

    name: str

    def act(self, episodes: Sequence[Episode]) -> list[str]:
        return self.reply([e.messages for e in episodes])

    def reply(self, conversations: Sequence[list[Message]]) -> list[str]:
        """One reply per conversation, in one batch."""
        raise NotImplementedError


class ModelPolicy(ConversationPolicy):
    """A policy on any backend (embedded, openai:, transformers:, mock), one batch of requests per step."""

    def __init__(self, spec: str, *, temperature: float = 0.7, max_tokens: int = 256, seed: int | None = 0,
                 **backend_options: Any):
        self.backend = load_backend(spec, **backend_options)
        self.name = self.backend.name
        self.config = GenerateConfig(temperature=temperature, max_tokens=max_tokens, seed=seed)

    def reply(self, conversations: Sequence[list[Message]]) -> list[str]:
        async def every() -> list[str]:
            answers = await asyncio.gather(*(self.backend.generate(list(c), self.config) for c in conversations))
            return [a.text for a in answers]

        return run_sync(every())


class LocalPolicy(ConversationPolicy):
    """A Hugging Face model in this process (the one being trained, or ``hf:DIR``: a base folder, ``smollm2``,
    or a LoRA folder from ``lwm train``): one batched ``generate`` per step; temperature 0 is greedy."""

    def __init__(self, model: Any, tokenizer: Any, max_new_tokens: int = 96, temperature: float = 0.0,
                 name: str = "local", seed: int | None = None):
        self.model, self.tokenizer, self.name = model, tokenizer, name
        self.max_new_tokens, self.temperature = max_new_tokens, temperature
        self.seed, self.calls = seed, 0
        """With ``seed``, sampled replies are reproducible: each batch draws from ``seed`` + its number."""

    @classmethod
    def load(cls, path: str, **options: Any) -> LocalPolicy:
        from lwm.train.common import load_for_inference

        model, tokenizer = load_for_inference(path)
        return cls(model, tokenizer, name=f"hf:{path}", **options)

    def reply(self, conversations: Sequence[list[Message]]) -> list[str]:
        import torch

        texts = [self.tokenizer.apply_chat_template(list(c), add_generation_prompt=True, tokenize=False)
                 for c in conversations]
        self.tokenizer.padding_side = "left"
        batch = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.model.device)
        sampling = {"do_sample": True, "temperature": self.temperature, "top_p": 1.0} if self.temperature > 0 \
            else {"do_sample": False}
        was_training = self.model.training
        self.model.eval()
        if self.seed is not None and self.temperature > 0:
            torch.manual_seed(self.seed + self.calls)
        self.calls += 1
        try:
            with torch.no_grad():
                out = self.model.generate(**batch, max_new_tokens=self.max_new_tokens,
                                          pad_token_id=self.tokenizer.pad_token_id, **sampling)
        finally:
            self.model.train(was_training)
        return self.tokenizer.batch_decode(out[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)


class VLLMPolicy(ConversationPolicy):
    """The model being trained, generating through TRL's vLLM integration (``use_vllm``, colocate or server
    mode): TRL's engine, with the training weights synced into it once per optimiser step, one batched call
    per lockstep step of every episode."""

    def __init__(self, trainer: Any, tokenizer: Any, max_new_tokens: int = 96, name: str = "policy-in-training"):
        self.trainer, self.tokenizer, self.name, self.max_new_tokens = trainer, tokenizer, name, max_new_tokens

    def reply(self, conversations: Sequence[list[Message]]) -> list[str]:
        trainer, engine = self.trainer, self.trainer.vllm_generation
        if trainer.state.global_step != getattr(trainer, "_last_loaded_step", None):
            engine.sync_weights()
            trainer._last_loaded_step = trainer.state.global_step
        prompts = [self.tokenizer.apply_chat_template(list(c), add_generation_prompt=True, tokenize=True,
                                                      return_dict=False) for c in conversations]
        limit, engine.max_completion_length = engine.max_completion_length, self.max_new_tokens
        try:
            _, completions, _, _ = engine.generate(prompts=[list(p) for p in prompts], images=None,
                                                   num_generations=1)
        finally:
            engine.max_completion_length = limit
        return self.tokenizer.batch_decode(completions, skip_special_tokens=True)


class ScriptedPolicy:
    """Replies from a list, by turn (the same script for every episode): for tests and demonstrations."""

    def __init__(self, replies: Sequence[str], name: str = "scripted"):
        self.replies, self.name = list(replies), name

    def act(self, episodes: Sequence[Episode]) -> list[str]:
        return [self.replies[min(turns(e), len(self.replies) - 1)] for e in episodes]


def turns(episode: Episode) -> int:
    """How many replies the policy has given in ``episode`` so far."""
    return sum(m["role"] == "assistant" for m in episode.messages)


def call(name: str, **arguments: Any) -> str:
    return "```json\n" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "\n```"


def keys(*lines: str) -> str:
    return "```json\n" + json.dumps([{"keystrokes": line + "\n", "duration": 0.3} for line in lines]) + "\n```"




def model_policy(spec: str, *, max_tokens: int = 160, temperature: float = 0.0, seed: int | None = 0,
                 **backend_options: Any) -> ConversationPolicy:
    """A model as the policy: ``hf:DIR`` (a local HF model or LoRA folder, batched in this process) or any model
    spec (``embedded``, ``openai:NAME`` ..., with ``seed`` and ``backend_options``); greedy by default."""
    if spec.startswith("hf:"):
        return LocalPolicy.load(spec.removeprefix("hf:"), max_new_tokens=max_tokens, temperature=temperature,
                                seed=seed)
    return ModelPolicy(spec, max_tokens=max_tokens, temperature=temperature, seed=seed, **backend_options)
