"""Android: JSON UI actions (tap, swipe, type, back, home, launch_app) over a UI hierarchy."""

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


@register("domain", "android")
class Android(Domain):
    name = "android"
    title = "Android"
    example_action = {"action": "tap", "x": 540, "y": 1200}
    shell_prompt = "adb> "

    def normalize(self, content: Any) -> dict[str, Any]:
        if not isinstance(content, dict) or content.get("action") not in REQUIRED:
            raise ActionError(f"android actions are objects with 'action' one of {', '.join(REQUIRED)}")
        missing = [k for k in REQUIRED[content["action"]] if k not in content]
        if missing:
            raise ActionError(f"android {content['action']} needs {', '.join(missing)}")
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
