"""Judging is a Scorer: (benchmark sample, predicted observation) -> Verdict.

Two are built in, registered under the registry's ``metric`` kind: ``rules`` (judge-free formulas,
``bench/rules.py``) and ``llm`` (an LLM judge reading the published judge layout). ``lwm bench judge``,
the RL reward and ``lwm demo`` all score through ``load_scorer``, so one prediction gets one score.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from lwm.backends import Backend, BackendError, GenerateConfig, Message, load_backend
from lwm.bench.judge import VERDICT_TAG, judge_messages, parse_verdict
from lwm.bench.protocol import PublishedProtocol
from lwm.bench.rows import Verdict
from lwm.bench.rules import rule_scores
from lwm.bench.samples import BenchSample
from lwm.conversation import Budget, ContextOverflowError, answer_room, history_parts
from lwm.domains import domain_names
from lwm.parsing import remove_marker
from lwm.prompts import PromptSet
from lwm.registry import get, names, register


@runtime_checkable
class Scorer(Protocol):
    name: str

    async def score(self, sample: BenchSample, prediction: str) -> Verdict:
        """The verdict on ``prediction`` for ``sample``; a failure is a failed Verdict, not an exception."""
        ...


@register("metric", "rules")
class RuleScorer:
    """The judge-free rule metrics: no model, deterministic, fast enough to be an RL reward."""

    name = "rules"
    version = 2
    """2: factuality and quality score the change from the previous real observation (1: plain overlap)."""

    async def score(self, sample: BenchSample, prediction: str) -> Verdict:
        previous = remove_marker(sample.history[-1][1]) if sample.history else None
        scores = rule_scores(remove_marker(prediction), sample.reference, history_parts(sample.history), previous)
        return Verdict(**scores, judge=self.name)


@register("metric", "llm")
class LLMJudge:
    """An LLM judge. With ``protocol`` (the published one, read from a checkout) the request is the
    published script's, sampled as it samples (no seed); else lwm's own layout and judge prompts, and its
    numbers are not comparable to published ones. Unparsable answers are asked again (``retries`` attempts
    in all, as the published script does); a failed call is not (the backend has retried transport errors
    already). ``max_tokens`` shrinks to the room the judge's window leaves, where it is known."""

    def __init__(self, backend: Backend | str, *, prompts_dir: str | Path | None = None, retries: int = 3,
                 temperature: float = 0.6, max_tokens: int = 4096, protocol: PublishedProtocol | None = None,
                 **backend_options: Any):
        self.backend = backend if not isinstance(backend, str) else load_backend(backend, **backend_options)
        self.name = self.backend.name
        self.prompts_dir, self.retries, self.protocol = prompts_dir, max(1, retries), protocol
        self.temperature, self.max_tokens = temperature, max_tokens

    def messages(self, sample: BenchSample, prediction: str) -> list[Message]:
        if self.protocol is not None:
            return self.protocol.judge_messages(sample, prediction)
        domain = sample.domain if sample.domain in domain_names() else "mcp"
        return judge_messages(sample, remove_marker(prediction), PromptSet(domain, self.prompts_dir).judge())

    async def score(self, sample: BenchSample, prediction: str) -> Verdict:
        messages = self.messages(sample, prediction)
        try:
            room = answer_room(messages, self.max_tokens, Budget(self.backend.context_window, 0,
                                                                  self.backend.count_tokens, self.name))
        except ContextOverflowError as exc:
            return Verdict.failure(f"judge request does not fit: {exc}", self.name)
        tag = self.protocol.verdict_tag(sample.domain) if self.protocol else VERDICT_TAG
        reason = ""
        for attempt in range(self.retries):
            seed = None if self.protocol else attempt
            config = GenerateConfig(temperature=self.temperature, seed=seed, max_tokens=room)
            try:
                gen = await self.backend.generate(messages, config)
            except BackendError as exc:
                return Verdict.failure(f"judge call failed: {exc}", self.name)
            try:
                verdict = parse_verdict(gen.text, tag)
            except ValueError as exc:
                reason = f"judge answer not parsed: {exc}"
                continue
            return Verdict(**verdict["scores"], total_score=verdict["total_score"], judge=self.name,
                           strengths=verdict["strengths"], weaknesses=verdict["weaknesses"], judge_raw_output=gen.text)
        return Verdict.failure(f"{reason} (after {self.retries} attempts)", self.name)


def load_scorer(spec: str = "rules", **options: Any) -> Scorer:
    """A registered metric by name (``rules``; ``llm`` with ``backend=``), else an LLM judge on model ``spec``."""
    if spec in names("metric"):
        return get("metric", spec)(**options)
    return LLMJudge(spec, **options)
