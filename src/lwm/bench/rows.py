"""The rows a benchmark run writes: predictions, verdicts, and judgements (a prediction and its verdict).

Field names are the published script's where it has one (``gen``, ``extracted_output``, the five
dimensions, ``total_score``, ``failed`` as 0.0/1.0, ``error_message``), and a prediction row carries
every field of its sample (``prompt``, ``response``, ``system_str``, …), so either tool reads the other's
files. A failure, in inference or in judging, is always named in ``error_message``.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from lwm.types import TextId


def row_key(row: BaseModel) -> str:
    """A row's identity in a run: its id, with ``#n`` for the n-th repeat of an id in the data (the
    published script scores repeated ids as separate samples, so lwm keeps them apart too)."""
    return sample_key(row.id, (row.model_extra or {}).get("occurrence"))  # type: ignore[attr-defined]


def sample_key(identifier: str, occurrence: int | None) -> str:
    return f"{identifier}#{occurrence}" if occurrence else str(identifier)


class Prediction(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: TextId
    task: str
    turn_idx: int = 1
    gen: str = ""
    """The model's whole answer."""
    prediction: str = ""
    """The observation parsed out of ``gen`` (as lwm's simulators parse it)."""
    extracted_output: str | None = None
    """What the judge scores: the observation as the published evaluation extracts it from ``gen``."""
    parse: str | None = None
    cached: bool | None = None
    model: str | None = None
    seconds: float | None = None
    error_message: str | None = Field(default=None, validation_alias=AliasChoices("error_message", "error"))
    never_fits: bool | None = None
    """The sample cannot fit the model's window with these settings: a rerun would fail the same way."""
    finish_reason: str | None = None
    """Why the answer ended: ``stop``, ``length`` (the token cap), ``loop`` (stopped repeating itself)."""
    edit: dict[str, Any] | None = None
    """An edit answer's status (``applied`` or ``malformed`` with its error and fallback), as lwm.edits says."""
    form: dict[str, Any] | None = None
    """What was repaired to make the answer well-formed (lwm.forms: a loop cut, JSON constrained, ...)."""

    @property
    def key(self) -> str:
        return row_key(self)

    @property
    def ok(self) -> bool:
        return self.error_message is None

    def same_answer(self, other: Prediction) -> bool:
        """Whether ``other`` holds the answer this row holds (so a verdict on one stands for the other)."""
        return self.gen == other.gen


class Verdict(BaseModel):
    """A scorer's answer for one prediction: the five dimensions (1-5) and their mean, or a failure."""

    model_config = ConfigDict(extra="allow")

    format: float | None = None
    factuality: float | None = None
    consistency: float | None = None
    realism: float | None = None
    quality: float | None = None
    total_score: float | None = None
    exact: float | None = None
    failed: float = 0.0
    error_message: str | None = None
    judge: str | None = None

    @classmethod
    def failure(cls, message: str, judge: str | None = None) -> Verdict:
        return cls(failed=1.0, error_message=message, judge=judge)

    @property
    def reward(self) -> float:
        """The total on a 0-1 scale (0 for a failed verdict): what an RL reward wants."""
        return 0.0 if self.failed or self.total_score is None else (self.total_score - 1) / 4

    def scores(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class Judgement(Prediction, Verdict):
    """A prediction row with its verdict merged in (the published ``judged.jsonl`` row)."""

    @classmethod
    def of(cls, prediction: Prediction, verdict: Verdict) -> Judgement:
        return cls.model_validate({**prediction.model_dump(exclude_none=True), **verdict.model_dump(exclude_none=True)})


RESULT_FIELDS = frozenset(Judgement.model_fields) - {"id", "task", "turn_idx"} | {
    "strengths", "weaknesses", "judge_raw_output"}
"""Fields a run writes: dropped from an input row (e.g. a judged file given as data) before a new run fills them."""
