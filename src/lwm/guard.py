"""The consistency guard: facts a session has already fixed, and the predictions that contradict them.

A world model forgets: asked ``whoami`` twice it may answer ``root`` then ``user``; a tool server's entity
may change its type between two reads. The ledger collects facts from the session's observations so far
(real or predicted) and checks each new prediction against them:

- **repeated reads**: an action that changes nothing (no mutating verb: write, create, delete, move, set,
  ``>``, ``rm``, …) answered once must be answered the same way again, until an action that may change
  something comes between. For a terminal the answer compared is the command's output on the screen.
- **entity attributes**: a JSON object with an identifier (``id``, ``name``, ``path``, ``uri``, ``url``,
  ``key``, ``uuid``, ``sha``) fixes its scalar fields; a later object with the same identifier must agree,
  unless an action that may change things has named that identifier since.

Values are compared with volatile parts masked (times, ids, sizes: ``lwm.volatile.mask``). On a conflict the
world model samples again (``WorldModel(guard=True)``), keeps the candidate with the fewest conflicts, and
repairs what is left where a repair is certain: a repeated read is answered with its earlier answer, an
entity's field is set back to the value the session fixed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from lwm.parsing import remove_marker
from lwm.volatile import mask

MUTATING = re.compile(
    r"\b(write|create|delete|remove|add|append|insert|move|rename|edit|set|update|patch|put|post|commit|"
    r"push|merge|reset|checkout|install|touch|rm|mv|cp|mkdir|rmdir|chmod|chown|tee|kill|apply|submit|click|"
    r"type|fill|press|select|navigate|goto|go_to|back|scroll|open|close|upload|drop|sleep|wait|run|exec)\w*|>|"
    r"sed\s+-i", re.IGNORECASE)
IDENTIFIERS = ("id", "name", "path", "uri", "url", "key", "uuid", "sha")
_ACTION = re.compile(r"```(?:json)?\s*([\s\S]*?)\s*```")
_PROMPT = re.compile(r"^\S+@\S+:.*[$#]\s?")


@dataclass(frozen=True)
class Conflict:
    kind: str
    """``repeat`` (a read answered differently) or ``entity`` (an attribute that changed)."""
    subject: str
    expected: str
    found: str


def action_key(user_text: str) -> tuple[str, str | None]:
    """The action a user message carries, canonical (JSON sorted, durations dropped), and for keystrokes
    the command typed."""
    blocks = _ACTION.findall(user_text)
    text = blocks[-1] if blocks else user_text.strip()
    try:
        value = json.loads(text)
    except ValueError:
        return text, None
    steps = value if isinstance(value, list) else [value]
    keys = [s.get("keystrokes") for s in steps if isinstance(s, dict)]
    command = "".join(k for k in keys if isinstance(k, str)).strip() or None
    cleaned = [{k: v for k, v in s.items() if k != "duration"} if isinstance(s, dict) else s for s in steps]
    return json.dumps(cleaned if isinstance(value, list) else cleaned[0], sort_keys=True), command


def command_output(screen: str, command: str | None) -> str:
    """What ``command`` printed on a terminal screen (the lines after its last prompt line, up to the next
    prompt), else the whole observation."""
    if not command:
        return screen.strip()
    lines = screen.splitlines()
    starts = [i for i, line in enumerate(lines) if _PROMPT.match(line) and line.rstrip().endswith(command)]
    if not starts:
        return screen.strip()
    out = []
    for line in lines[starts[-1] + 1:]:
        if _PROMPT.match(line):
            break
        out.append(line)
    return "\n".join(out).strip()


def _identifier(obj: dict[str, Any]) -> str | None:
    """The field that names this object (the first of IDENTIFIERS it has, non-empty), if any."""
    return next((k for k in IDENTIFIERS if isinstance(obj.get(k), str | int) and obj.get(k) != ""), None)


def _entities(value: Any) -> Iterator[tuple[str, str, str]]:
    """(subject, attribute, value) for the scalar fields of every identified object in a JSON value."""
    if isinstance(value, list):
        for item in value:
            yield from _entities(item)
    elif isinstance(value, dict):
        ident = _identifier(value)
        for k, v in value.items():
            if ident and k != ident and isinstance(v, str | int | float | bool):
                yield f"{ident}={value[ident]}", k, json.dumps(v)
            yield from _entities(v)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


@dataclass
class Ledger:
    reads: dict[str, str] = field(default_factory=dict)
    """Canonical read-only action -> the observation that answered it."""
    facts: dict[tuple[str, str], str] = field(default_factory=dict)

    @classmethod
    def from_pairs(cls, pairs: Sequence[tuple[str, str]]) -> Ledger:
        ledger = cls()
        for user, assistant in pairs:
            ledger.observe(user, assistant)
        return ledger

    def _forget(self, action: str) -> None:
        """An action that may change things: reads are stale, and so are the entities it names."""
        self.reads.clear()
        for key in [k for k in self.facts if k[0].split("=", 1)[1] in action]:
            del self.facts[key]

    def observe(self, user: str, observation: str) -> None:
        key, command = action_key(user)
        text = remove_marker(observation)
        if MUTATING.search(key):
            self._forget(key)
        else:
            self.reads[key] = text
        for subject, attribute, value in _entities(_json(text)):
            self.facts[(subject, attribute)] = value

    def conflicts(self, user: str, observation: str) -> list[Conflict]:
        key, command = action_key(user)
        text = remove_marker(observation)
        found: list[Conflict] = []
        if not MUTATING.search(key) and key in self.reads:
            # the same key is the same command, so the earlier answer is cut from its screen the same way
            expected, answer = (mask(command_output(t, command)) for t in (self.reads[key], text))
            if answer != expected:
                found.append(Conflict("repeat", key, expected, answer))
        mutating = MUTATING.search(key)
        for subject, attribute, value in _entities(_json(text)):
            fixed = self.facts.get((subject, attribute))
            if fixed is not None and mask(fixed) != mask(value) and not (
                    mutating and subject.split("=", 1)[1] in key):
                found.append(Conflict("entity", f"{subject}.{attribute}", fixed, value))
        return found

    def repair(self, user: str, observation: str) -> str:
        """``observation`` with what the ledger knows for certain put back: a repeated read's earlier answer
        (whole observations only: a terminal screen also shows what came before), entities' fixed fields."""
        key, command = action_key(user)
        if command is None and not MUTATING.search(key) and key in self.reads:
            return self.reads[key]
        data = _json(remove_marker(observation))
        if data is None:
            return observation
        self._set_fixed(data)
        return json.dumps(data, indent=2, ensure_ascii=False)

    def _set_fixed(self, value: Any) -> None:
        if isinstance(value, list):
            for item in value:
                self._set_fixed(item)
        elif isinstance(value, dict):
            ident = _identifier(value)
            for k, v in list(value.items()):
                fixed = self.facts.get((f"{ident}={value[ident]}", k)) if ident and k != ident else None
                if fixed is not None and isinstance(v, str | int | float | bool):
                    value[k] = json.loads(fixed)
                else:
                    self._set_fixed(v)
