"""Training sets from trajectories, one per stage (CPT, SFT, RL), from the train split only.

- CPT: each trajectory as plain text (context, then every action and its real observation), packed
  into blocks of about ``block_chars`` characters: ``{"text": ...}``.
- SFT: one chat sample per turn in exactly the layout WorldModel sends at inference (system prompt,
  earlier turns as user/assistant pairs, the action), answered by the tagged real observation, with the
  source's reasoning in ``<think>`` when it has one: ``{"prompt": [...], "completion": [...]}`` (TRL's
  conversational prompt-completion format, so the loss falls on the observation only).
- RL: the same prompts without the answer, plus the real observation and the turn's whole history as
  (action, observation) pairs, which the reward's scorer reads as the benchmark reads a sample:
  ``{"prompt": [...], "reference": ..., "history": [[user, assistant], ...]}`` (TRL GRPO's prompt column).
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from lwm.conversation import MESSAGE_OVERHEAD, Budget, ContextOverflowError, Conversation, conversation, fit
from lwm.data.jsonl import write_dicts
from lwm.domains import get_domain
from lwm.types import Trajectory

Stage = Literal["cpt", "sft", "rl"]
SEPARATOR = "\n\n<|end_of_trajectory|>\n\n"


class HeldOutLeak(ValueError):
    """A held-out trajectory reached a training set."""


def _counter(max_tokens: int | None) -> Callable[[str], int]:
    """Token counts by the packaged model's tokenizer when rows must fit ``max_tokens``; else a cheap
    estimate (nothing is dropped then, so the count is only informative)."""
    if max_tokens is None:
        return Budget().count
    from lwm.backends.embedded import EmbeddedBackend

    return lru_cache(maxsize=8192)(EmbeddedBackend(n_ctx=max_tokens).count_tokens)


def trajectory_text(trajectory: Trajectory) -> str:
    return conversation(get_domain(trajectory.domain), trajectory.context, trajectory.turns).text()


def cpt_rows(trajectories: Iterable[Trajectory], block_chars: int = 8000) -> Iterator[dict[str, Any]]:
    """Trajectory texts packed greedily into blocks (a long trajectory is its own block, split at turns)."""
    block: list[str] = []
    size = 0
    for trajectory in trajectories:
        text = trajectory_text(trajectory)
        if block and size + len(text) > block_chars:
            yield {"text": SEPARATOR.join(block)}
            block, size = [], 0
        block.append(text)
        size += len(text) + len(SEPARATOR)
    if block:
        yield {"text": SEPARATOR.join(block)}


@dataclass(frozen=True)
class Guidance:
    """What lwm's own models are asked with beyond the published layout (``lwm.layout.guide``): edit
    answers where they are shorter, and retrieved real transitions (never the row's own trajectory)."""

    edits: bool = False
    retriever: Any = None
    examples: int = 2
    examples_when: str = "every-step"
    """Where the examples go (``lwm.layout.EXAMPLES_WHEN``): as the model will be asked."""
    recent: int = 4
    """Edit targets consider the previous observation and this many earlier ones as bases."""
    unseen_share: float = 0.5
    """Share of trajectories whose rows retrieve nothing from their own source, as an evaluation on held-out
    sources retrieves: the model learns both to copy a near example and to do without one."""
    max_error_share: float | None = 0.2
    """Per source, rows whose answer is an error (``Error...``) are kept up to this share of its rows (a
    seeded choice; the turns stay in later rows' history). A corpus that probes tools with bad arguments
    errs on a third of its calls, and a model trained on that answers an unseen tool with an error."""

    def keep_error(self, row_id: str, errors: int, rows: int) -> bool:
        """Whether an error row of a source with ``errors`` error rows in ``rows`` is kept (the same rows
        for the same corpus, run after run)."""
        if self.max_error_share is None or errors <= self.max_error_share * rows:
            return True
        return _draw(row_id) < self.max_error_share * (rows - errors) / ((1 - self.max_error_share) * errors)

    def exclude_sources(self, trajectory: Trajectory) -> set[str]:
        from lwm.data.sources import source_of

        return {source_of(trajectory)} if _draw(trajectory.id) < self.unseen_share else set()


def _draw(key: str) -> float:
    """A number in [0, 1) fixed by ``key``: a seeded choice that does not depend on the order of the rows."""
    import hashlib

    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") / 2**32


def _is_error(content: str) -> bool:
    return content.lstrip().startswith("Error")


def _answer(turn: Any, content: str | None = None) -> str:
    think = f"<think>\n{turn.observation.reasoning}\n</think>\n" if turn.observation.reasoning else ""
    return f"{think}<predicted_observation>\n{content or turn.observation.content}\n</predicted_observation>"


def _prompts(trajectories: Iterable[Trajectory], compact: bool, max_tokens: int | None = None,
             skipped: list[str] | None = None, guided: Guidance | None = None,
             ) -> Iterator[tuple[Trajectory, int, Conversation, list, str]]:
    """Each turn's conversation, its messages laid out as at inference, and the answer to learn. Under a
    token budget, the answer's tokens (up to half the budget; a longer answer is cut by the trainer) are
    reserved, and a turn whose system prompt and action alone do not fit is skipped and named in ``skipped``."""
    from lwm.data.sources import source_of
    from lwm.edits import shortest_answer
    from lwm.layout import guide, same_tool_turn

    count = _counter(max_tokens)
    guided = guided or Guidance()
    errors, turns = Counter(), Counter()  # per source, for keeping error rows to their share
    if guided.edits and guided.max_error_share is not None:
        trajectories = list(trajectories)
        for trajectory in trajectories:
            source = source_of(trajectory)
            turns[source] += len(trajectory.turns)
            errors[source] += sum(_is_error(turn.observation.content) for turn in trajectory.turns)
    for trajectory in trajectories:
        domain = get_domain(trajectory.domain)
        source = source_of(trajectory)
        for k, turn in enumerate(trajectory.turns):
            if guided.edits and _is_error(turn.observation.content) and \
                    not guided.keep_error(f"{trajectory.id}-t{k + 1}", errors[source], turns[source]):
                continue
            laid_out = conversation(domain, trajectory.context, trajectory.turns[:k], turn.action, compact=compact)
            prompted, shown = guide(laid_out, trajectory.domain, edits=guided.edits, retriever=guided.retriever,
                                    examples=guided.examples, exclude={trajectory.id}, when=guided.examples_when,
                                    exclude_sources=guided.exclude_sources(trajectory) if guided.retriever else ())
            answer = _answer(turn)
            if guided.edits:
                bases = {f"turn {j + 1}": trajectory.turns[j].observation.content
                         for j in range(max(0, k - 1 - guided.recent), k - 1)}
                same = same_tool_turn(laid_out)
                if same is not None and same[0] < k:
                    bases[f"turn {same[0]}"] = trajectory.turns[same[0] - 1].observation.content
                bases.update({f"example {n}": t.after for n, t in enumerate(shown, start=1)})
                if k:
                    bases["previous"] = trajectory.turns[k - 1].observation.content
                answer = _answer(turn, shortest_answer(turn.observation.content, bases))
            reserve = 0 if max_tokens is None else min(count(answer) + MESSAGE_OVERHEAD, max_tokens // 2)
            try:
                yield trajectory, k, laid_out, fit(prompted, Budget(max_tokens, reserve, count)).messages, answer
            except ContextOverflowError:
                if skipped is not None:
                    skipped.append(f"{trajectory.id}-t{k + 1}")


def sft_rows(trajectories: Iterable[Trajectory], compact: bool = False, max_tokens: int | None = None,
             skipped: list[str] | None = None, guided: Guidance | None = None) -> Iterator[dict[str, Any]]:
    for trajectory, k, _, messages, answer in _prompts(trajectories, compact, max_tokens, skipped, guided):
        yield {"id": f"{trajectory.id}-t{k + 1}", "domain": trajectory.domain, "prompt": messages,
               "completion": [{"role": "assistant", "content": answer}]}


def rl_rows(trajectories: Iterable[Trajectory], compact: bool = False, max_tokens: int | None = None,
            skipped: list[str] | None = None, guided: Guidance | None = None) -> Iterator[dict[str, Any]]:
    """The prompt to sample from, plus what the reward scores against: the real observation and the
    whole history (every earlier pair, as the benchmark sample of this turn holds it)."""
    for trajectory, k, laid_out, messages, _ in _prompts(trajectories, compact, max_tokens, skipped, guided):
        yield {"id": f"{trajectory.id}-t{k + 1}", "domain": trajectory.domain, "prompt": messages,
               "reference": trajectory.turns[k].observation.content,
               "history": [list(pair) for pair in laid_out.pairs]}


def check_no_leak(trajectories: list[Trajectory], heldout_ids: set[str]) -> None:
    leaked = sorted({t.id for t in trajectories} & heldout_ids)
    if leaked:
        raise HeldOutLeak(f"{len(leaked)} held-out trajectories are in the training input, e.g. {leaked[:3]}; "
                          "build from the train split (lwm data split)")


def take_per_domain(rows: Iterable[dict[str, Any]], take: dict[str, int], seed: int = 0) -> list[dict[str, Any]]:
    """A seeded sample of ``take[domain]`` rows from each named domain (other domains dropped), shuffled:
    a focused extra sitting for the domains a model is weak in, with a little replay of the rest."""
    by_domain: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_domain[row["domain"]].append(row)
    rng = random.Random(seed)
    sample: list[dict[str, Any]] = []
    for domain, count in take.items():
        if len(by_domain[domain]) < count:
            raise ValueError(f"--take {domain}={count}: only {len(by_domain[domain])} {domain} rows were built")
        sample += rng.sample(by_domain[domain], count)
    rng.shuffle(sample)
    return sample


def build(stage: Stage, trajectories: list[Trajectory], out: str | Path, *, heldout_ids: set[str] | None = None,
          compact: bool = False, block_chars: int = 8000, max_tokens: int | None = None,
          skipped: list[str] | None = None, take: dict[str, int] | None = None, seed: int = 0,
          guided: Guidance | None = None) -> int:
    """Write the stage's JSONL to ``out``; returns the number of rows. ``max_tokens`` (sft, rl) keeps each
    row inside that many tokens; turns that cannot fit are left out and named in ``skipped``. ``take``
    (sft, rl) keeps a seeded sample of that many rows per domain (``take_per_domain``)."""
    check_no_leak(trajectories, heldout_ids or set())
    if stage == "cpt":
        rows: Iterable[dict[str, Any]] = cpt_rows(trajectories, block_chars)
    elif stage == "sft":
        rows = sft_rows(trajectories, compact, max_tokens, skipped, guided)
    elif stage == "rl":
        rows = rl_rows(trajectories, compact, max_tokens, skipped, guided)
    else:
        raise ValueError(f"unknown stage {stage!r}; use cpt, sft or rl")
    if take:
        if stage == "cpt":
            raise ValueError("take samples sft or rl rows; cpt blocks have no single domain")
        rows = take_per_domain(rows, take, seed)
    return write_dicts(out, rows)
