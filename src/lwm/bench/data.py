"""AgentWorldBench samples: reading the published format, and exporting lwm trajectories to it.

A sample is one turn of one trajectory: ``system_str`` (its own world-model system prompt), ``prompt``
and ``response`` (every turn's action prompt and real observation), ``turn_idx`` (1-based), and
``current_prompt``. The model sees the system prompt, turns before ``turn_idx`` as user/assistant pairs,
then the current prompt; the real observation of turn ``turn_idx`` is the reference.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, field_validator

from lwm.backends import Message
from lwm.domains import get_domain
from lwm.parsing import strip_marker
from lwm.types import Trajectory


class BenchSample(BaseModel):
    model_config = ConfigDict(extra="allow")

    task: str
    id: str
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

    @field_validator("id", mode="before")
    @classmethod
    def _text_id(cls, value: object) -> object:
        return str(value) if isinstance(value, int) else value

    @property
    def domain(self) -> str:
        return self.task.split("/")[-1]

    @property
    def index(self) -> int:
        return max(self.turn_idx - 1, 0)

    def messages(self) -> list[Message]:
        messages: list[Message] = [{"role": "system", "content": self.system_str}] if self.system_str else []
        for j in range(min(self.index, len(self.prompt), len(self.response))):
            messages += [{"role": "user", "content": self.prompt[j]},
                         {"role": "assistant", "content": self.response[j]}]
        current = self.current_prompt or (self.prompt[self.index] if self.index < len(self.prompt) else "")
        messages.append({"role": "user", "content": current})
        return messages

    @property
    def reference(self) -> str:
        """The real observation of this turn, without the ``**Environment Observation:**`` marker."""
        return strip_marker(self.response[self.index]) if self.index < len(self.response) else ""

    @property
    def history(self) -> list[tuple[str, str]]:
        return list(zip(self.prompt[: self.index], (strip_marker(r) for r in self.response[: self.index]),
                        strict=False))

    @property
    def prefix_key(self) -> str:
        """Samples of one trajectory share this: the system prompt and the first action."""
        head = self.system_str + "\x00" + (self.prompt[0] if self.prompt else "")
        return hashlib.sha256(head.encode()).hexdigest()[:16]


def sample_files(path: str | Path) -> list[Path]:
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*_test.jsonl")) or sorted(path.glob("*.jsonl"))
        if not files:
            raise FileNotFoundError(f"no <domain>_test.jsonl files in {path}")
        return files
    if not path.exists():
        raise FileNotFoundError(f"benchmark data not found: {path}")
    return [path]


def load_samples(path: str | Path, problems: list[str] | None = None) -> list[BenchSample]:
    """All samples under ``path``; each bad line is reported (file:line: why) in ``problems`` and skipped."""
    samples: list[BenchSample] = []
    seen: set[str] = set()
    for file in sample_files(path):
        with file.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    sample = BenchSample.model_validate(json.loads(line))
                    if sample.index >= len(sample.response):
                        raise ValueError(f"turn_idx {sample.turn_idx} has no response")
                    if sample.id in seen:
                        raise ValueError(f"duplicate id {sample.id!r}")
                except ValueError as exc:
                    if problems is not None:
                        problems.append(f"{file}:{number}: skipped: {str(exc).splitlines()[0][:200]}")
                    continue
                seen.add(sample.id)
                samples.append(sample)
    return samples


def export_trajectories(trajectories: Iterable[Trajectory], compact: bool = False) -> list[BenchSample]:
    """One sample per turn, with the domain's full (or compact, for small models) system prompt."""
    samples = []
    for trajectory in trajectories:
        domain = get_domain(trajectory.domain)
        system = domain.system_prompt(trajectory.context, compact=compact)
        prompts = [domain.render_action(t.action, i) for i, t in enumerate(trajectory.turns, start=1)]
        responses = [domain.render_observation(t.observation.content) for t in trajectory.turns]
        for k in range(1, len(prompts) + 1):
            samples.append(BenchSample(task=trajectory.domain, id=f"{trajectory.id}-t{k}", prompt=prompts,
                                       response=responses, current_prompt=prompts[k - 1], system_str=system,
                                       turn_idx=k, total_turns=len(prompts)))
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
        keep.update(items[int(i * step)].id for i in range(min(per_domain, len(items))))
    return [s for s in samples if s.id in keep]


def write_samples(samples: Iterable[BenchSample], out: str | Path) -> dict[str, int]:
    """``<domain>_test.jsonl`` files under ``out``; returns the count per domain."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    by_domain: dict[str, list[BenchSample]] = {}
    for sample in samples:
        by_domain.setdefault(sample.domain, []).append(sample)
    for domain, items in by_domain.items():
        with (out / f"{domain}_test.jsonl").open("w", encoding="utf-8") as handle:
            for sample in items:
                handle.write(sample.model_dump_json() + "\n")
    return {d: len(v) for d, v in by_domain.items()}
