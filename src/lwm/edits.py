"""Observations written as edits against a base: the model writes what changes, lwm applies it.

Most of an observation is already known (a terminal keeps its scrollback, a page tree changes in a few
nodes, a tool's result repeats the shape of its last one), so a world model may answer, inside its usual
``<predicted_observation>`` block::

    @edit turn 3                     (the base: "previous" (default), "turn K" of the session, "example N")
    <<<<<<< SEARCH
    lines of the base, exactly
    =======
    what stands there now
    >>>>>>> REPLACE

Each block replaces the first place its SEARCH lines stand in the base; an empty SEARCH appends; no block at
all means "the base, unchanged". lwm applies the edit before anyone sees the observation, so bench rows,
SimEnv, the served faces and rewards all read whole observations. An answer that does not start with
``@edit`` is whole, as before (Qwen-AgentWorld and the published protocol are unchanged). An edit that cannot
be applied (an unknown base, a SEARCH not in the base, a block left open) falls back to the base and says so
in its status: never an exception.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

HEAD = re.compile(r"^@edit(?:[ \t]+(.*?))?[ \t]*$", re.IGNORECASE)
BASE = re.compile(r"^(?:previous|prev|last|turn[ \t]*(\d+)|example[ \t]*(\d+))$", re.IGNORECASE)
SEARCH, DIVIDER, REPLACE = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"


@dataclass(frozen=True)
class Applied:
    """The whole observation an answer stands for, and how it was read."""

    content: str
    status: str
    """``whole`` (not an edit), ``applied``, or ``malformed`` (fell back to the base)."""
    base: str | None = None
    """Which base an edit named (``previous``, ``turn 3``, ``example 1``)."""
    blocks: int = 0
    error: str | None = None

    def metadata(self) -> dict[str, object]:
        out: dict[str, object] = {"status": self.status}
        if self.status != "whole":
            out.update(base=self.base, blocks=self.blocks)
        if self.error:
            out["error"] = self.error
        return out


class EditError(ValueError):
    pass


def is_edit(answer: str) -> bool:
    return HEAD.match(answer.lstrip().split("\n", 1)[0]) is not None


def _base(name: str, history: Sequence[str], examples: Sequence[str], initial: str = "") -> str:
    match = BASE.match(name.strip())
    if match is None:
        raise EditError(f"unknown base {name!r} (previous, turn K or example N)")
    turn, example = match.groups()
    if example is not None:
        if not 1 <= int(example) <= len(examples):
            raise EditError(f"no example {example} (the prompt showed {len(examples)})")
        return examples[int(example) - 1]
    if turn is not None:
        if not 1 <= int(turn) <= len(history):
            raise EditError(f"no turn {turn} in a session of {len(history)} earlier turns")
        return history[int(turn) - 1]
    if not history:
        if initial:
            return initial  # the first turn's previous observation is what the session showed at its start
        raise EditError("no previous observation to edit (the session's first turn)")
    return history[-1]


def parse_blocks(body: str, close_open: bool = False) -> list[tuple[str, str]]:
    """The (search, replace) pairs of an edit body; raises EditError on a block left open or stray text.
    ``close_open``: the answer was cut (a loop stopped, the token cap), so a last block open after its divider
    ends where the text ends."""
    blocks: list[tuple[str, str]] = []
    lines = body.split("\n")
    i = 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        if lines[i].rstrip() != SEARCH:
            raise EditError(f"expected {SEARCH!r}, found {lines[i][:60]!r}")
        try:
            divider = next(j for j in range(i + 1, len(lines)) if lines[j].rstrip() == DIVIDER)
            end = next((j for j in range(divider + 1, len(lines)) if lines[j].rstrip() == REPLACE),
                       len(lines) if close_open else None)
            if end is None:
                raise StopIteration
        except StopIteration:
            raise EditError("a block is not closed (SEARCH, ======= and REPLACE lines)") from None
        blocks.append(("\n".join(lines[i + 1:divider]), "\n".join(lines[divider + 1:end])))
        i = end + 1
    return blocks


def _locate(lines: list[str], search: list[str]) -> int | None:
    """The line where ``search`` stands in ``lines`` — whole lines, trailing spaces ignored (terminal screens
    pad lines; models drop the padding) — its last place when it stands in several (a screen grows at the
    bottom); None when nowhere."""
    wanted = [s.rstrip() for s in search]
    stripped = [s.rstrip() for s in lines]
    for start in range(len(lines) - len(wanted), -1, -1):
        if stripped[start:start + len(wanted)] == wanted:
            return start
    return None


def apply_blocks(base: str, blocks: Sequence[tuple[str, str]]) -> str:
    text = base
    for search, replace in blocks:
        if not search.strip():
            text = f"{text}\n{replace}" if text and replace else text + replace
            continue
        lines, wanted = text.split("\n"), search.split("\n")
        at = _locate(lines, wanted)
        if at is None:
            raise EditError(f"SEARCH text not in the base: {search[:60]!r}")
        text = "\n".join([*lines[:at], *replace.split("\n"), *lines[at + len(wanted):]])
    return text


def replacements(body: str) -> str:
    """The text an edit's REPLACE parts hold, joined: what the model meant to stand in the observation, for a
    first turn whose edit names nothing it can apply to."""
    kept, inside = [], False
    for line in body.split("\n"):
        if line.rstrip() == DIVIDER:
            inside = True
        elif line.rstrip() in (REPLACE, SEARCH):
            inside = False
        elif inside:
            kept.append(line)
    return "\n".join(kept).strip("\n")


def apply_answer(answer: str, history: Sequence[str], examples: Sequence[str] = (), initial: str = "",
                 cut: bool = False) -> Applied:
    """The whole observation ``answer`` stands for, given the session's earlier observations (``history``,
    oldest first, markers removed), the retrieved examples' observations the prompt showed and what the session
    showed before its first action (``initial``). ``cut``: the answer was stopped before its end.

    An edit that cannot be applied falls back, in order, to the previous observation, to the text its REPLACE
    parts hold (a first turn has nothing else), to the session's initial state; its status says so."""
    head, _, body = answer.lstrip().partition("\n")
    match = HEAD.match(head)
    if match is None:
        return Applied(answer, "whole")
    name = (match.group(1) or "previous").strip()
    try:
        base = _base(name, history, examples, initial)
        blocks = parse_blocks(body, close_open=cut)
        return Applied(apply_blocks(base, blocks), "applied", name, len(blocks))
    except EditError as exc:
        fallback = next((text for text in (history[-1] if history else "", replacements(body), initial) if text), "")
        return Applied(fallback, "malformed", name, 0, str(exc))


def edit_target(base: str, new: str, name: str = "previous") -> str | None:
    """An edit that turns ``base`` into ``new`` (``@edit <name>`` and SEARCH/REPLACE blocks with as few
    unchanged lines around each change as place it), or None when none is found that applies back to
    exactly ``new``. Training data uses it where it is shorter than the whole answer."""
    for context in (0, 1, 2, 4):
        target = _edit_target(base, new, context, name)
        if target is not None:
            return target
    return None


def _edit_target(base: str, new: str, context: int, name: str) -> str | None:
    a, b = base.split("\n"), new.split("\n")
    blocks: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in _grouped(a, b, context):
        if tag == "append":
            blocks.append(("", "\n".join(b[j1:j2])))
        else:
            blocks.append(("\n".join(a[i1:i2]), "\n".join(b[j1:j2])))
    text = f"@edit {name}" + "".join(f"\n{SEARCH}\n{s}\n{DIVIDER}\n{r}\n{REPLACE}" if s else
                                      f"\n{SEARCH}\n{DIVIDER}\n{r}\n{REPLACE}" for s, r in blocks)
    try:
        return text if apply_blocks(base, parse_blocks(text.partition("\n")[2])) == new else None
    except EditError:
        return None


def shortest_answer(new: str, bases: dict[str, str]) -> str:
    """What a model should learn to write for ``new``: the shortest of the whole text and an edit against
    each named base (``{"previous": ..., "turn 2": ..., "example 1": ...}``)."""
    best = new
    for name, base in bases.items():
        if not base:
            continue
        target = edit_target(base, new, name=name)
        if target is not None and len(target) < len(best):
            best = target
    return best


def guidance(with_examples: bool) -> str:
    """How a model may answer with edits, added to the system prompt when edits are on."""
    bases = "`@edit previous` (the last observation), `@edit turn K` (turn K's observation)" + \
        (", `@edit example N` (example N's observation after its action)" if with_examples else "")
    return ("\n\nWhen most of the observation is already written above, answer with an edit instead of the whole "
            f"text: inside the answer block, first a line naming the base — {bases} — then blocks of the form\n"
            f"{SEARCH}\nexact lines of the base\n{DIVIDER}\nthe lines that stand there now\n{REPLACE}\n"
            "An empty SEARCH appends at the end; `@edit previous` with no block repeats the last observation. "
            "Otherwise write the whole observation.")


def _grouped(a: list[str], b: list[str], context: int) -> list[tuple[str, int, int, int, int]]:
    """Changed regions of ``a`` -> ``b``, each widened by ``context`` equal lines (merged when they touch);
    a region that only adds lines after the end of ``a`` is an ``append``."""
    regions: list[list[int]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        lo = max(0, i1 - context)
        # lines only inserted are placed by the line after them (or before, at the end), context or not
        hi = min(len(a), i2 + max(context, int(i1 == i2 and i2 < len(a))))
        jlo, jhi = j1 - (i1 - lo), j2 + (hi - i2)
        if regions and lo <= regions[-1][1]:
            regions[-1][1], regions[-1][3] = hi, jhi
        else:
            regions.append([lo, hi, jlo, jhi])
    out: list[tuple[str, int, int, int, int]] = []
    for lo, hi, jlo, jhi in regions:
        if lo == hi == len(a):
            out.append(("append", lo, hi, jlo, jhi))
        else:
            out.append(("replace", lo, hi, jlo, jhi))
    return out
