"""Android: JSON UI actions over a UI hierarchy, in lwm's form (``{"action": "tap", "x": .., "y": ..}``) or
AndroidWorld's (``{"action_type": "click", "x": .., "y": ..}``, ``input_text``, ``scroll``, ``navigate_back``,
``open_app``, …), as agents in the field send them.

Any JSON object naming an action is accepted, even one the device would refuse (an unknown action, a
missing coordinate): the simulator's job is to predict what the environment answers to it, error included.
What is still refused is what is not an action at all: text that is not a JSON object, or an object that
names no action."""

from __future__ import annotations

import shlex
from typing import Any

from lwm.domains.base import ActionError, Domain
from lwm.registry import register
from lwm.types import Action

REQUIRED = {
    "tap": ("x", "y"),
    "long_press": ("x", "y"),
    "swipe": ("x1", "y1", "x2", "y2"),
    "type": ("text",),
    "back": (),
    "home": (),
    "launch_app": ("package",),
    "wait": (),
}


@register("domain")
class Android(Domain):
    name = "android"
    title = "Android"
    action_kind = "ui"
    example_action = {"action": "tap", "x": 540, "y": 1200}
    shell_prompt = "adb> "

    def normalize(self, content: Any) -> dict[str, Any]:
        if not isinstance(content, dict) or not isinstance(content.get("action", content.get("action_type")), str):
            raise ActionError("android actions are JSON objects naming an action: lwm's {\"action\": \"tap\", "
                              "\"x\": 540, \"y\": 1200} or AndroidWorld's {\"action_type\": \"click\", ...}")
        return content

    def from_shell(self, line: str) -> Action:
        """``tap 540 1200``, ``type hello``, ``back`` … or a JSON action."""
        if line.strip().startswith("{"):
            return self.action_from_text(line)
        words = shlex.split(line)
        name, args = (words[0], words[1:]) if words else ("", [])
        if name == "type":
            return self.action({"action": "type", "text": " ".join(args)})
        keys = REQUIRED.get(name, ())
        if len(args) != len(keys):
            raise ActionError(f"usage: {name} {' '.join(keys)}".rstrip())
        values = {k: int(v) if v.lstrip("-").isdigit() else v for k, v in zip(keys, args, strict=True)}
        return self.action({"action": name, **values})
