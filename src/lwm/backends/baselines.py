"""Pseudo-models no world model should lose to: answers built from the conversation itself, no model.

- ``copy-last``: the previous real observation again (the last assistant message). Where an action changes
  little, copying scores well on overlap metrics; a world model's skill is what it adds over this.
- ``echo-action``: the current action as the observation (what a model that only parrots its input does).
- ``copy-retrieved``: the real observation after the nearest retrieved transition (lwm-mini's packaged
  transitions, searched as lwm-mini's are, with the same leak rules: never the session's own trajectory). A
  model that retrieves must beat this to be more than a lookup.

All are deterministic and free, so ``lwm bench run --model copy-last`` is a baseline any benchmark can
afford. On a first turn there is nothing to copy: ``copy-last`` answers nothing (scored as "No output"); where
nothing is retrieved (a tool no transition calls), ``copy-retrieved`` answers nothing either. lwm does not
repair a baseline's answers (``repairable``): a floor that fell back to another floor would be neither.
"""

from __future__ import annotations

from lwm.backends.base import BackendInfo, GenerateConfig, Generation, Message, approx_tokens
from lwm.parsing import OBSERVATION_TAG
from lwm.registry import register


def last_observation(messages: list[Message]) -> str | None:
    """The conversation's last assistant message (the previous observation), or None on a first turn."""
    return next((m["content"] for m in reversed(messages) if m["role"] == "assistant"), None)


class _Baseline:
    compact_prompts = False
    repairable = False
    """lwm.forms' repairs (a resample, a fall-back to the previous observation) are not applied to a baseline."""
    context_window: int | None = None
    name = "baseline"
    detail = ""

    @classmethod
    def from_spec(cls, model: str | None, **_: object) -> _Baseline:
        return cls()

    @classmethod
    def info(cls) -> BackendInfo:
        return BackendInfo(name=cls.name, usable=True, example=cls.name, detail=f"baseline: {cls.detail}")

    def answer(self, messages: list[Message]) -> str:
        raise NotImplementedError

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Generation:
        text = self.answer(messages)
        tagged = f"<{OBSERVATION_TAG}>\n{text}\n</{OBSERVATION_TAG}>" if text else ""
        return Generation(text=tagged, finish_reason="stop", completion_tokens=approx_tokens(text))

    def count_tokens(self, text: str) -> int:
        return approx_tokens(text)

    async def aclose(self) -> None:
        return None


@register("backend", "copy-last")
class CopyLastBackend(_Baseline):
    name, detail = "copy-last", "the previous real observation again"

    def answer(self, messages: list[Message]) -> str:
        return last_observation(messages) or ""


@register("backend", "echo-action")
class EchoActionBackend(_Baseline):
    name, detail = "echo-action", "the current action as the observation"

    def answer(self, messages: list[Message]) -> str:
        return messages[-1]["content"] if messages and messages[-1]["role"] == "user" else ""


@register("backend", "copy-retrieved")
class CopyRetrievedBackend(_Baseline):
    """Answers with an edit that copies retrieved example 1 whole; lwm's edit machinery makes it that
    transition's full real observation (the prompt shows only its first 700 characters)."""

    name, detail = "copy-retrieved", "the real observation after the nearest retrieved transition"

    def __init__(self) -> None:
        from lwm.backends.embedded import packaged_guidance

        lwm_mini = packaged_guidance("lwm-mini")  # the index lwm-mini retrieves from, asked as it is asked
        self.asked_with = {"edits": True, "transitions": lwm_mini.get("transitions"), "examples_when": "every-step"}

    def answer(self, messages: list[Message]) -> str:
        shown = bool(messages) and messages[-1]["role"] == "user" and "\n### Example 1 (" in messages[-1]["content"]
        return "@edit example 1" if shown else ""
