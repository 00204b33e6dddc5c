"""Policies for the agent loop (``lwm.agent.loop.Policy``): any lwm model spec, a scripted list of replies, and
the scripted experts whose real-environment episodes warm a small policy up before RL (it must be able to act at
all). Model policies reply to conversations (``reply``); ``act`` hands them each episode's messages."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from lwm.agent.checks import FINAL, observed_cells
from lwm.agent.loop import Episode, Policy
from lwm.agent.search_suite import TITLES, base_family, expert_queries, title_pattern
from lwm.agent.table import to_markdown
from lwm.agent.tasks import Task
from lwm.backends import GenerateConfig, Message, load_backend
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
                 name: str = "local"):
        self.model, self.tokenizer, self.name = model, tokenizer, name
        self.max_new_tokens, self.temperature = max_new_tokens, temperature

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


def expert_replies(task: Task) -> list[str]:
    """What a competent agent does for ``task``: the searches or commands, then the right answer."""
    check = task.check
    if task.domain == "search":
        steps = [call("web_search", query=query) for query in expert_queries(task)]
        return [*steps, call(FINAL, answer=to_markdown(check.gold, check.columns))]
    if task.domain == "terminal":
        return [*_terminal_commands(task), call(FINAL, answer="done")]
    return [*_mcp_calls(task), call(FINAL, answer="done")]


def _terminal_commands(task: Task) -> list[str]:
    expected = task.check.expect[0].strip(":")
    if task.family == "count-lines":
        return [keys("wc -l < data.txt > count.txt")]
    if task.family == "create-file":
        path = task.check.action[0]["keystrokes"].split("cat ")[1].split(" ")[0]
        return [keys(f"mkdir -p {path.split('/')[0]} && echo {expected} > {path}")]
    if task.family == "find-file":
        secret = task.instruction.split("'")[1]
        return [keys(f"grep -l {secret} notes/*.txt | xargs -n1 basename > answer.txt")]
    old = task.instruction.split("from ")[1].split(" to ")[0]
    return [keys(f"sed -i 's/^mode={old}$/{expected}/' config.ini")]


def _mcp_calls(task: Task) -> list[str]:
    text, expect = task.instruction, task.check.expect
    if task.family == "memory-entity":
        kind = text.split("of type '")[1].split("'")[0]
        entity = {"name": expect[0], "entityType": kind, "observations": [expect[1]]}
        return [call("create_entities", entities=[entity])]
    if task.family == "memory-relation":
        a, b, rel = expect
        return [call("create_entities", entities=[{"name": a, "entityType": "person", "observations": []},
                                                  {"name": b, "entityType": "person", "observations": []}]),
                call("create_relations", relations=[{"from": a, "to": b, "relationType": rel}])]
    path = task.check.action["arguments"]["path"]
    return [call("create_directory", path=path.rsplit("/", 1)[0]), call("write_file", path=path, content=expect[0])]


class ExpertPolicy:
    """The scripted expert of each episode's task."""

    name = "expert"

    def act(self, episodes: Sequence[Episode]) -> list[str]:
        out = []
        for episode in episodes:
            if episode.task is None:
                raise ValueError("the expert acts on tasks: this episode has none")
            plan = expert_replies(episode.task)
            out.append(plan[min(turns(episode), len(plan) - 1)])
        return out


class ReaderPolicy:
    """A scripted agent that knows where to look but not the answer: it sends the expert's searches, then
    answers with each entity's summary copied from the first results title that names it (empty when none
    does). Its reward in sim against real, on the same tasks, says how far a simulated engine serves the
    answers a policy is rewarded for (``lwm agent eval --policy reader --env sim|real``)."""

    name = "reader"

    def __init__(self, tasks: Sequence[Task]):
        unreadable = sorted({t.family for t in tasks if base_family(t.family) not in TITLES})
        if unreadable:
            raise ValueError(f"the reader answers system call and module lookups only, not {', '.join(unreadable)}")

    def act(self, episodes: Sequence[Episode]) -> list[str]:
        out = []
        for episode in episodes:
            task = episode.task
            if task is None:
                raise ValueError("the reader acts on tasks: this episode has none")
            queries, turn = expert_queries(task), turns(episode)
            if turn < len(queries):
                out.append(call("web_search", query=queries[turn]))
                continue
            key, base = task.check.columns[0], base_family(task.family)
            shown = [m["content"] for m in episode.messages[1:] if m["role"] == "user"]
            rows = [{key: row[key], **(observed_cells(title_pattern(base, row[key]), shown) or {})}
                    for row in task.check.gold]
            out.append(call(FINAL, answer=to_markdown(rows, task.check.columns)))
        return out


def make_policy(spec: str, tasks: Sequence[Task] = (), *, max_tokens: int = 160, temperature: float = 0.0,
                seed: int | None = 0, **backend_options: Any) -> Policy:
    """The one reading of a policy spec: ``expert`` (the scripted expert of each episode's task), ``reader`` (searches
    like the expert, copies what it sees), ``hf:DIR`` (a local HF model or LoRA folder, batched in this process)
    or any model spec (``embedded``, ``openai:NAME`` ..., with ``seed`` and ``backend_options``); greedy by
    default."""
    if spec == "expert":
        return ExpertPolicy()
    if spec == "reader":
        return ReaderPolicy(tasks)
    if spec.startswith("hf:"):
        return LocalPolicy.load(spec.removeprefix("hf:"), max_new_tokens=max_tokens, temperature=temperature)
    return ModelPolicy(spec, max_tokens=max_tokens, temperature=temperature, seed=seed, **backend_options)
