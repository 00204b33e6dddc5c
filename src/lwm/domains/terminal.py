"""Terminal: bash in tmux. Actions are keystroke lists with a wait; the observation is the screen."""

from __future__ import annotations

from typing import Any

from lwm.domains.base import ActionError, Domain
from lwm.registry import register
from lwm.types import Action, finite_number


@register("domain")
class Terminal(Domain):
    name = "terminal"
    title = "Terminal"
    screen = True
    action_kind = "keystrokes"
    example_action = [{"keystrokes": "ls -la\n", "duration": 0.1}]
    shell_prompt = "$ "
    initial_state = "user@sandbox:~$ "  # what the real terminal (and the corpus) shows

    def normalize(self, content: Any) -> list[dict[str, Any]]:
        steps = [content] if isinstance(content, dict) else content
        if not isinstance(steps, list) or not steps:
            raise ActionError('terminal actions are a list like [{"keystrokes": "ls\\n", "duration": 0.1}]')
        out = []
        for i, step in enumerate(steps):
            if not isinstance(step, dict) or not isinstance(step.get("keystrokes"), str):
                raise ActionError(f"terminal action step {i}: expected an object with a 'keystrokes' string")
            if "\0" in step["keystrokes"]:
                raise ActionError(f"terminal action step {i}: keystrokes cannot contain a NUL character")
            duration = step.get("duration", 0.1)
            if not finite_number(duration) or duration < 0:
                raise ActionError(f"terminal action step {i}: 'duration' must be a finite, non-negative number "
                                  f"of seconds, not {duration!r}")
            out.append({"keystrokes": step["keystrokes"], "duration": duration})
        return out

    def from_shell(self, line: str) -> Action:
        """A typed line is keystrokes plus Enter; ``C-c`` typed alone sends Ctrl+C."""
        if line.strip() in {"C-c", "C-d", "C-z"}:
            return self.action([{"keystrokes": line.strip(), "duration": 0.1}])
        return self.action([{"keystrokes": line + "\n", "duration": 0.5}])
