"""AgentWorldBench samples: reading the published format, and exporting lwm trajectories to it.

A sample is one turn of one trajectory: ``system_str`` (its own world-model system prompt), ``prompt``
and ``response`` (every turn's action prompt and real observation), ``turn_idx`` (1-based), and
``current_prompt``. The model sees the system prompt, turns before ``turn_idx`` as user/assistant pairs,
then the current prompt; the real observation of turn ``turn_idx`` is the reference.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, field_validator

from lwm.bench.rows import row_key
from lwm.conversation import Conversation, conversation
from lwm.data.jsonl import JsonlFile
from lwm.domains import get_domain
from lwm.parsing import remove_marker
from lwm.types import TextId, Trajectory


class BenchSample(BaseModel):
    model_config = ConfigDict(extra="allow")

    task: str
    id: TextId
    prompt: list[str]
    response: list[str]
    current_prompt: str = ""
    system_str: str = ""
    turn_idx: int = 1
    total_turns: int | None = None

    @field_validator("prompt", "response", mode="before")
    @classmethod
    def _listify(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @property
    def domain(self) -> str:
        return self.task.split("/")[-1]

    @property
    def index(self) -> int:
        return max(self.turn_idx - 1, 0)

    @property
    def key(self) -> str:
        return row_key(self)

    @property
    def current(self) -> str:
        """The action of this turn as the judge is shown it: ``current_prompt``, else the turn's own prompt."""
        return self.current_prompt or (self.prompt[self.index] if self.index < len(self.prompt) else "")

    @property
    def history(self) -> list[tuple[str, str]]:
        """The earlier turns as (action prompt, observation) pairs, as the model sees them."""
        return list(zip(self.prompt[: self.index], self.response[: self.index], strict=False))

    def conversation(self) -> Conversation:
        """What the model is asked: as the published script asks since July 2026, the turn's own prompt
        (``prompt[turn_idx - 1]``) after the history; ``current_prompt`` only where ``prompt`` is too short."""
        action = self.prompt[self.index] if self.index < len(self.prompt) else self.current_prompt
        return Conversation(self.system_str or None, self.history, action)

    @property
    def raw_reference(self) -> str:
        """The real observation of this turn as recorded ("" when the row has none)."""
        return self.response[self.index] if self.index < len(self.response) else ""

    @property
    def reference(self) -> str:
        """The real observation, cleaned as the published judge cleans it (marker removed, stripped)."""
        return remove_marker(self.raw_reference)

    @property
    def trajectory_id(self) -> str:
        """The trajectory this sample is a turn of (``lwm bench export`` names samples ``<trajectory>-t<k>``)."""
        head, sep, turn = self.id.rpartition("-t")
        return head if sep and turn.isdigit() else self.id

    @property
    def prefix_key(self) -> str:
        """Samples of one trajectory share this: the system prompt and the first action."""
        head = self.system_str + "\x00" + (self.prompt[0] if self.prompt else "")
        return hashlib.sha256(head.encode()).hexdigest()[:16]


def sample_files(path: str | Path) -> list[Path]:
    path = Path(path)
    if path.is_dir():
        files = sorted([*path.glob("*_test.jsonl"), *path.glob("*_test.jsonl.xz")]) or sorted(path.glob("*.jsonl"))
        if not files:
            raise FileNotFoundError(f"no <domain>_test.jsonl (or .jsonl.xz) files in {path}")
        return files
    if not path.exists():
        raise FileNotFoundError(f"benchmark data not found: {path}")
    return [path]


def load_samples(path: str | Path, problems: list[str] | None = None) -> list[BenchSample]:
    """All samples under ``path``, in data order. Each unreadable line is reported (file:line: why) in
    ``problems`` and skipped; a row with no response at its turn or a repeated id is kept and scored as
    the published script scores it (an empty ground truth; each repeat its own sample), with a warning."""
    samples: list[BenchSample] = []
    seen: Counter[str] = Counter()
    for file in sample_files(path):
        for sample in JsonlFile(file, BenchSample).rows(problems):
            seen[sample.id] += 1
            notes = []
            if sample.index >= len(sample.response):
                notes.append(f"turn_idx {sample.turn_idx} has no response: scored against an empty ground truth")
            if seen[sample.id] > 1:
                sample = sample.model_copy(update={"occurrence": seen[sample.id]})
                notes.append(f"repeated id (occurrence {seen[sample.id]}): scored as its own sample, as "
                             f"{sample.key!r}")
            if problems is not None:
                problems.extend(f"{file}: sample {sample.id}: {note}" for note in notes)
            samples.append(sample)
    return samples


CHARS_PER_TOKEN = 2
"""A low guess (SmolLM2's tokenizer measured 2.2-3.3 characters per token on the sample bench's observations),
so that a budget estimated from characters is rarely short."""


def answer_budgets(samples: Iterable[BenchSample], window: int | None, floor: int = 256) -> dict[str, int]:
    """Per domain, the answer tokens a prediction needs: the 95th percentile of the domain's real
    observations (estimated from characters), plus a quarter, rounded up to 64; at least ``floor`` and at
    most half the model's window. A uniform large budget lets a small model that loops run for minutes
    per sample; a small one cuts off long real pages."""
    lengths: dict[str, list[int]] = {}
    for s in samples:
        lengths.setdefault(s.domain, []).append(len(s.reference))
    ceiling = window // 2 if window else 8192
    budgets = {}
    for domain, chars in lengths.items():
        chars.sort()
        tokens = chars[min(len(chars) - 1, int(0.95 * len(chars)))] / CHARS_PER_TOKEN * 1.25
        budgets[domain] = max(floor, min(ceiling, -(-int(tokens) // 64) * 64))
    return budgets


def export_trajectories(trajectories: Iterable[Trajectory], compact: bool = False) -> list[BenchSample]:
    """One sample per turn, with the domain's full (or compact, for small models) system prompt."""
    samples = []
    for trajectory in trajectories:
        laid_out = conversation(get_domain(trajectory.domain), trajectory.context, trajectory.turns, compact=compact)
        prompts = [user for user, _ in laid_out.pairs]
        responses = [assistant for _, assistant in laid_out.pairs]
        for k in range(1, len(prompts) + 1):
            samples.append(BenchSample(task=trajectory.domain, id=f"{trajectory.id}-t{k}", prompt=prompts,
                                       response=responses, current_prompt=prompts[k - 1],
                                       system_str=laid_out.system or "", turn_idx=k, total_turns=len(prompts)))
    return samples


def spread(samples: list[BenchSample], per_domain: int) -> list[BenchSample]:
    """At most ``per_domain`` samples of each domain, evenly spaced over its samples (so over its
    trajectories and turn depths), in their original order; deterministic."""
    by_domain: dict[str, list[BenchSample]] = {}
    for sample in samples:
        by_domain.setdefault(sample.domain, []).append(sample)
    keep: set[str] = set()
    for items in by_domain.values():
        step = max(len(items) / per_domain, 1.0)
        # each pick is jittered inside its stretch (golden-ratio offsets): a plain stride equal to the turns per
        # trajectory picked the same turn of every trajectory (8-turn web sessions, 40 picks: all first turns)
        keep.update(items[min(len(items) - 1, int(i * step + (i * 0.618034 % 1) * step))].id
                    for i in range(min(per_domain, len(items))))
    return [s for s in samples if s.id in keep]


def write_samples(samples: Iterable[BenchSample], out: str | Path) -> dict[str, int]:
    """``<domain>_test.jsonl`` files under ``out``; returns the count per domain."""
    by_domain: dict[str, list[BenchSample]] = {}
    for sample in samples:
        by_domain.setdefault(sample.domain, []).append(sample)
    return {domain: JsonlFile(Path(out) / f"{domain}_test.jsonl", BenchSample).write_all(items)
            for domain, items in by_domain.items()}
