"""Turning a world model's raw answer into a clean observation.

Models answer as ``<think>…</think><predicted_observation>…</predicted_observation>``, but real output
is messier: reasoning left unclosed when generation stopped, nested think blocks, a chat template
that opened ``<think>`` in the prompt so only ``</think>`` appears, several answer blocks (the last
one wins), or no tags at all (then the whole remaining text is the answer).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OBSERVATION_TAG = "predicted_observation"
OBSERVATION_MARKER = "**Environment Observation:**"

_THINK = re.compile(r"<(/?)think\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class ParsedAnswer:
    content: str
    reasoning: str | None
    status: str
    """``tagged`` (an answer block was found), ``untagged`` (whole text used) or ``empty``."""


def split_reasoning(text: str, tag: str = OBSERVATION_TAG) -> tuple[str, str | None]:
    """Separate ``<think>`` reasoning from the rest; tolerant of nesting, orphans and no closing tag."""
    kept: list[str] = []
    reasoning: list[str] = []
    depth, pos, start = 0, 0, 0
    for m in _THINK.finditer(text):
        if m.group(1) != "/":
            if depth == 0:
                kept.append(text[pos : m.start()])
                start = m.end()
            depth += 1
        elif depth == 0:
            # An orphan close: the template opened <think> in the prompt; all before it is reasoning.
            reasoning.append("".join(kept) + text[pos : m.start()])
            kept, pos = [], m.end()
        else:
            depth -= 1
            if depth == 0:
                reasoning.append(text[start : m.start()])
                pos = m.end()
    if depth > 0:
        tail = text[start:]
        answer_at = tail.lower().rfind(f"<{tag.lower()}>")
        if answer_at >= 0:  # the answer was written inside unclosed reasoning: keep the answer
            reasoning.append(tail[:answer_at])
            kept.append(tail[answer_at:])
        else:
            reasoning.append(tail)
    else:
        kept.append(text[pos:])
    thought = "\n".join(r.strip() for r in reasoning if r.strip()) or None
    return "".join(kept), thought


def extract_tag(text: str, tag: str) -> str | None:
    """The content of the last ``<tag>`` block, to its closing tag or the end of text; None if absent."""
    lower = text.lower()
    at = lower.rfind(f"<{tag.lower()}>")
    if at < 0:
        return None
    body = text[at + len(tag) + 2 :]
    end = body.lower().find(f"</{tag.lower()}>")
    return body if end < 0 else body[:end]


def strip_marker(text: str, marker: str = OBSERVATION_MARKER) -> str:
    """Remove the ``**Environment Observation:**`` marker that real observations carry."""
    head = text.lstrip()
    if head.startswith(marker):
        text = head[len(marker) :]
    return text.strip("\n").rstrip()


NO_OUTPUT = "No output"
"""What the published evaluation judges when a generation holds no observation (only reasoning, or nothing)."""


def published_output(raw: str, tag: str = OBSERVATION_TAG) -> str:
    """The observation as AgentWorldBench's evaluation extracts it for its judge (``extracted_output``):
    reasoning removed, the last ``<tag>`` block (else the whole rest), stripped on both sides, and the
    ``NO_OUTPUT`` placeholder when nothing is left. Unlike ``parse_answer``, leading indentation is not
    kept: this is the benchmark's text, so both tools score the same string."""
    if not raw:
        return NO_OUTPUT
    rest, _ = split_reasoning(raw, tag)
    block = extract_tag(rest, tag)
    return (block if block is not None else rest).strip() or NO_OUTPUT


def remove_marker(text: str, marker: str = OBSERVATION_MARKER) -> str:
    """The benchmark's marker removal: a leading marker is cut, else every occurrence of it anywhere in
    the text; the result is stripped on both sides (an empty marker only strips)."""
    if marker and text.startswith(marker):
        return text[len(marker):].strip()
    return (text.replace(marker, "") if marker else text).strip()


def parse_answer(raw: str, tag: str = OBSERVATION_TAG, reasoning: str | None = None) -> ParsedAnswer:
    """Parse a model answer; ``reasoning`` is a separate reasoning field from the server, if any."""
    rest, thought = split_reasoning(raw or "", tag)
    thoughts = "\n".join(t for t in (reasoning, thought) if t) or None
    block = extract_tag(rest, tag)
    if block is not None:
        content, status = strip_marker(block.strip("\n")), "tagged"
    else:
        content, status = strip_marker(rest.strip("\n")), "untagged"
    if not content.strip():
        return ParsedAnswer("", thoughts, "empty")
    return ParsedAnswer(content, thoughts, status)
