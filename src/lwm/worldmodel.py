"""WorldModel: the next observation of a session, from any backend.

``predict(trajectory, action)`` lays the session out (``lwm.conversation``: the domain's system
prompt with the session's context, each earlier turn as a user/assistant pair, the current action),
keeps it inside the model's context window by dropping the oldest turns first (and saying so in the
system prompt), asks the backend, parses the answer and caches it on disk. ``complete(conversation)``
does the same for a session already laid out (a benchmark sample).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Collection, Coroutine, Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from lwm import forms
from lwm.backends import Backend, GenerateConfig, Message, load_backend
from lwm.cache import GenerationCache, cache_key
from lwm.conversation import (
    MESSAGE_OVERHEAD,
    Budget,
    ContextOverflowError,
    Conversation,
    Prompt,
    answer_room,
    conversation,
    fit,
)
from lwm.domains import Domain, get_domain
from lwm.edits import Applied, apply_answer
from lwm.forms import CUT, Form
from lwm.guard import Ledger
from lwm.layout import guide
from lwm.parsing import parse_answer, strip_marker
from lwm.retrieval import TransitionIndex, action_text, packaged_index, tool_name
from lwm.types import Action, Observation, Trajectory

__all__ = ["MESSAGE_OVERHEAD", "ContextOverflowError", "Prompt", "WorldModel", "run_sync"]
T = TypeVar("T")


class WorldModel:
    def __init__(
        self,
        backend: Backend | str | None = None,
        *,
        config: GenerateConfig | None = None,
        cache: GenerationCache | bool = True,
        prompts_dir: str | Path | None = None,
        compact: bool | None = None,
        stop_at_answer: bool | None = None,
        guard: bool = False,
        guard_retries: int = 2,
        well_formed: bool = True,
        edits: bool | None = None,
        retriever: TransitionIndex | bool | None = None,
        examples: int = 2,
        examples_when: str | None = None,
        **backend_options: Any,
    ):
        self.backend: Backend = backend if backend is not None and not isinstance(backend, str) \
            else load_backend(backend, **backend_options)
        self.config = config or GenerateConfig()
        # Not ``cache or None``: an empty cache has length 0 and would read as false.
        self.cache = cache if isinstance(cache, GenerationCache) else GenerationCache.usable() if cache else None
        self.prompts_dir = prompts_dir
        self.compact = self.backend.compact_prompts if compact is None else compact
        if stop_at_answer if stop_at_answer is not None else self.compact:
            # Small models rarely reason first; stopping at the closing tag saves many tokens.
            self.config = self.config.model_copy(update={"stop": ("</predicted_observation>",)})
        self._count = lru_cache(maxsize=8192)(self.backend.count_tokens)
        self.guard, self.guard_retries = guard, guard_retries
        self.well_formed = well_formed and getattr(self.backend, "repairable", True)
        """Repair answers as ``lwm.forms`` says (a loop cut, JSON where JSON is expected, ...), each counted;
        never a baseline's (``backends.baselines``)."""
        # Edits (lwm.edits) are asked for only when ``edits``; an edit answer is applied whatever asked for it.
        # None: as the model was trained to be asked (a packaged lwm model: edits, and its own transitions
        # retrieved); False turns either off; an index replaces the model's own.
        asked = getattr(self.backend, "asked_with", None) or {}
        self.edits = bool(asked.get("edits")) if edits is None else edits
        if retriever is None and asked.get("transitions"):
            retriever = packaged_index(Path(asked["transitions"]))
        self.retriever: TransitionIndex | None = retriever if isinstance(retriever, TransitionIndex) else None
        self.examples = examples
        # Where retrieved examples go (lwm.layout.EXAMPLES_WHEN: every step, only where the session has nothing to
        # copy from yet, or kept where first shown); None: as the model's manifest says, else every step.
        self.examples_when = examples_when or asked.get("examples_when") or "every-step"

    # --- messages ------------------------------------------------------------------------------
    def budget(self, reserve: int | None = None) -> Budget:
        """This model's window, with ``reserve`` answer tokens kept free (``config.max_tokens`` by default)."""
        return Budget(self.backend.context_window, self.config.max_tokens if reserve is None else reserve,
                      self._count, self.backend.name)

    def answer_room(self, messages: list[Message], wanted: int) -> int:
        return answer_room(messages, wanted, self.budget(0))

    def conversation(self, trajectory: Trajectory, action: Action) -> Conversation:
        return conversation(get_domain(trajectory.domain), trajectory.context, trajectory.turns, action,
                            compact=self.compact, prompts_dir=self.prompts_dir)

    def build_prompt(self, trajectory: Trajectory, action: Action, reserve: int | None = None) -> Prompt:
        """The messages for ``action`` after ``trajectory``, inside the window less ``reserve`` answer tokens."""
        return fit(self.conversation(trajectory, action), self.budget(reserve))

    # --- prediction ----------------------------------------------------------------------------
    async def predict(self, trajectory: Trajectory, action: Action | Any,
                      config: GenerateConfig | None = None) -> Observation:
        """The next observation after ``action``; raises ActionError, ContextOverflowError, BackendError.

        ``config`` overrides this model's sampling settings for the call (e.g. an episode's own seed)."""
        domain = get_domain(trajectory.domain)
        action = action if isinstance(action, Action) else domain.action(action)
        return await self.complete(self.conversation(trajectory, action), domain, config)

    async def complete(self, conv: Conversation, domain: Domain | None = None,
                       config: GenerateConfig | None = None, exclude: Collection[str] = ()) -> Observation:
        """Ask the model about a laid-out session (e.g. a benchmark sample), inside its window; parse and
        cache the answer, apply it when it is an edit, and make it well-formed (``lwm.forms``). ``exclude``:
        trajectory ids retrieval must not show (the session's own, in an evaluation)."""
        guided, shown = self.guided(conv, domain, exclude)
        history = [strip_marker(assistant) for _, assistant in conv.pairs]
        examples = [t.after for t in shown]

        def resolve(content: str, cut: bool) -> Applied:
            return apply_answer(content, history, examples, conv.initial, cut)

        config = config or self.config
        prompt = fit(guided, self.budget(config.max_tokens))
        observation = await self.generate(prompt.messages, domain, config, resolve)
        if self.well_formed and conv.current is not None:
            observation = await self._well_formed(conv, prompt.messages, observation, domain, config, resolve,
                                                  history, shown)
        if self.guard and conv.current is not None:
            observation = await self._guarded(conv, prompt.messages, observation, domain, config, resolve)
        metadata = {**observation.metadata, "dropped_turns": prompt.dropped_turns,
                    "prompt_tokens": observation.metadata["prompt_tokens"] or prompt.tokens}
        if forms.pasted(observation, history[-1] if history else conv.initial):
            metadata["edit"] = {**metadata["edit"], "unrelated": True}  # another session's page, said in the note
        if shown:
            metadata["retrieved"] = [f"{t.trajectory}-t{t.turn}" for t in shown]
        return observation.model_copy(update={"metadata": metadata})

    async def _well_formed(self, conv: Conversation, messages: list[Message], first: Observation,
                           domain: Domain | None, config: GenerateConfig, resolve: Callable[[str, bool], Applied],
                           history: list[str], shown: list[Any]) -> Observation:
        """The repairs that ask the model again (``lwm.forms``): JSON where the result is JSON (constrained
        decoding), never the action echoed back, no pasted page of another session, no HTML where the session has
        none, never empty. Each is said in ``metadata["form"]``."""
        observation, form = first, dict(first.metadata.get("form") or {})
        resample = config.model_copy(update={"temperature": max(config.temperature, 0.7),
                                             "seed": (config.seed or 0) + 7919})
        json_only = config.model_copy(update={"json_only": True})
        action = action_text(conv.current or "")
        tool = tool_name(action)
        wants_json = False
        if tool is not None:
            calls = [(tool_name(action_text(u)), strip_marker(a)) for u, a in conv.pairs]
            same = [t.after for t in shown if tool_name(t.action) == tool]
            wants_json = forms.expects_json([r for name, r in calls if name == tool], same, tool in conv.json_tools,
                                            [r for name, r in calls if name is not None and name != tool])
        if forms.echoes(observation.content, action):
            again = await self.generate(messages, domain, json_only if wants_json else resample, resolve)
            if again.content.strip() and not forms.echoes(again.content, action):
                observation, form["echo"] = again, "json" if wants_json else "resampled"
            else:
                form["echo"] = "kept"
        own = history[-1] if history else conv.initial
        if forms.pasted(observation, own):
            observation, form["unrelated"] = await self._related(conv, messages, observation, domain, resample,
                                                                  resolve, own)
        if wants_json and not forms.is_json(observation.content) and not forms.is_error(observation.content):
            constrained = await self.generate(messages, domain, json_only, resolve)
            if forms.is_json(constrained.content) and not forms.echoes(constrained.content, action):
                observation, form["json"] = constrained, "constrained"
            else:
                form["json"] = "not json"
        html_ok = domain is None or forms.wants_html([conv.initial, *history, *(t.after for t in shown)],
                                                     domain.html_pages)
        if not html_ok and forms.is_html(observation.content):
            again = await self.generate(messages, domain, resample, resolve)
            if again.content.strip() and not forms.is_html(again.content):
                observation, form["html"] = again, "resampled"
            else:
                observation = observation.model_copy(update={"content": forms.html_text(observation.content)})
                form["html"] = "stripped"
        if not observation.content.strip():
            again = await self.generate(messages, domain, resample, resolve)
            kept = [("previous", history[-1] if history else ""), ("initial", conv.initial),
                    ("example", shown[0].after if shown else "")]
            if again.content.strip() and (html_ok or not forms.is_html(again.content)):
                observation, form["empty"] = again, "resampled"
            elif found := next(((name, text) for name, text in kept if text.strip()), None):
                observation, form["empty"] = observation.model_copy(update={"content": found[1]}), found[0]
            else:  # nothing to copy at all: ask without lwm's guidance, for a whole answer
                plain = await self._unguided(conv, domain, config, resolve)
                observation, form["empty"] = plain, "unguided" if plain.content.strip() else "none"
        if form:
            observation = observation.model_copy(update={"metadata": {**observation.metadata, "form": form}})
        return observation

    async def _unguided(self, conv: Conversation, domain: Domain | None, config: GenerateConfig,
                        resolve: Callable[[str, bool], Applied]) -> Observation:
        """The question asked without lwm's guidance (no edits, no retrieved examples)."""
        return await self.generate(fit(conv, self.budget(config.max_tokens)).messages, domain, config, resolve)

    async def _related(self, conv: Conversation, messages: list[Message], pasted: Observation,
                       domain: Domain | None, resample: GenerateConfig, resolve: Callable[[str, bool], Applied],
                       own: str) -> tuple[Observation, str]:
        """An answer in place of one that pasted a retrieved example's page (another session's): a resample,
        else the question asked without examples, else the pasted answer kept (and said)."""
        again = await self.generate(messages, domain, resample, resolve)
        if again.content.strip() and not forms.unrelated(again.content, own):
            return again, "resampled"
        plain = await self._unguided(conv, domain, resample.model_copy(update={"temperature": 0.0}), resolve)
        if plain.content.strip() and not forms.unrelated(plain.content, own):
            return plain, "unguided"
        return pasted, "kept"

    def guided(self, conv: Conversation, domain: Domain | None,
               exclude: Collection[str] = ()) -> tuple[Conversation, list[Any]]:
        """``conv`` with lwm's own guidance (``lwm.layout.guide``: how to answer with edits in the system
        prompt; the retrieved real transitions in the last user message), and the transitions shown."""
        return guide(conv, domain.name if domain else None, edits=self.edits, retriever=self.retriever,
                     examples=self.examples, exclude=exclude, when=self.examples_when)

    async def _guarded(self, conv: Conversation, messages: list[Message], first: Observation,
                       domain: Domain | None, config: GenerateConfig,
                       resolve: Callable[[str, bool], Applied] | None = None) -> Observation:
        """The consistency guard (``lwm.guard``): sample again while the answer contradicts what the session
        fixed, keep the candidate with the fewest conflicts, and repair what is left where that is certain."""
        ledger = Ledger.from_pairs(conv.pairs)
        best, conflicts = first, ledger.conflicts(conv.current or "", first.content)
        found, tries = len(conflicts), 0
        while conflicts and tries < self.guard_retries:
            tries += 1
            again = config.model_copy(update={"temperature": max(config.temperature, 0.7),
                                              "seed": (config.seed or 0) + 7919 * tries})
            candidate = await self.generate(messages, domain, again, resolve)
            left = ledger.conflicts(conv.current or "", candidate.content)
            if len(left) < len(conflicts):
                best, conflicts = candidate, left
        repaired = False
        if conflicts:
            fixed = ledger.repair(conv.current or "", best.content)
            if fixed != best.content and not ledger.conflicts(conv.current or "", fixed):
                best, conflicts, repaired = best.model_copy(update={"content": fixed}), [], True
        guard = {"conflicts": found, "resamples": tries, "left": len(conflicts), "repaired": repaired}
        return best.model_copy(update={"metadata": {**best.metadata, "guard": guard}})

    async def generate(self, messages: list[Message], domain: Domain | None = None,
                       config: GenerateConfig | None = None,
                       resolve: Callable[[str, bool], Applied] | None = None) -> Observation:
        """Ask the model with ready messages as they are (no fitting); parse and cache the answer.
        ``resolve`` turns an edit answer into the whole observation (``complete`` knows the bases); with it, the
        answer is also cleaned as lwm's own sessions read it (a loop cut, lwm's example truncation mark
        removed); without it (a published protocol's request) the answer is parsed as it is."""
        config = config or self.config
        use_cache = self.cache is not None and config.deterministic
        key = cache_key(self.backend.name, messages, config) if use_cache else ""
        generation = self.cache.get(key) if use_cache else None
        cached = generation is not None
        if generation is None:
            generation = await self.backend.generate(messages, config)
            if use_cache:
                self.cache.put(key, self.backend.name, generation)
        text, form = generation.text, Form()
        cut = generation.finish_reason in CUT
        if resolve is not None and self.well_formed and cut:
            text, form.loop = forms.trim_loop(text)
        parsed = (domain.parse if domain else parse_answer)(text, reasoning=generation.reasoning)
        applied = resolve(parsed.content, cut) if resolve is not None else Applied(parsed.content, "whole")
        content = applied.content
        if resolve is not None and self.well_formed:
            content, form.truncation_mark = forms.strip_truncation_mark(content)
        metadata: dict[str, Any] = {
            "model": self.backend.name, "parse": parsed.status, "cached": cached,
            "prompt_tokens": generation.prompt_tokens, "completion_tokens": generation.completion_tokens,
            "finish_reason": generation.finish_reason,
        }
        if generation.reused_tokens is not None:
            metadata["reused_tokens"] = generation.reused_tokens
        if applied.status != "whole":
            metadata["edit"] = applied.metadata()
        if form.metadata():
            metadata["form"] = form.metadata()
        return Observation(content=content, raw=generation.text, reasoning=parsed.reasoning, metadata=metadata)

    async def predict_many(self, items: Iterable[tuple[Trajectory, Action | Any]]) -> list[Observation]:
        """Predictions for many (trajectory, action) pairs, run concurrently, in input order."""
        return list(await asyncio.gather(*(self.predict(t, a) for t, a in items)))

    def predict_sync(self, trajectory: Trajectory, action: Action | Any,
                     config: GenerateConfig | None = None) -> Observation:
        return run_sync(self.predict(trajectory, action, config))

    def close(self) -> None:
        run_sync(self.backend.aclose())
        if self.cache is not None:
            self.cache.close()


class _LoopThread:
    """A background event loop, for sync calls made from inside a running loop (e.g. a notebook)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="lwm-loop", daemon=True).start()


_background: _LoopThread | None = None
_background_lock = threading.Lock()
_local = threading.local()


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code.

    Each thread keeps one event loop of its own, so async clients (bound to a loop) are reused from
    call to call without a thread hop; inside an already running loop, a background loop runs it.
    """
    global _background
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        loop = getattr(_local, "loop", None)
        if loop is None or loop.is_closed():
            loop = _local.loop = asyncio.new_event_loop()
        task = loop.create_task(coro)
        try:
            return loop.run_until_complete(task)
        except BaseException:  # Ctrl+C: abandon the call instead of leaving it pending in the loop
            task.cancel()
            loop.run_until_complete(asyncio.gather(task, return_exceptions=True))
            raise
    with _background_lock:
        if _background is None:
            _background = _LoopThread()
    return asyncio.run_coroutine_threadsafe(coro, _background.loop).result()
