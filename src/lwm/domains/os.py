"""OS: Python code (pyautogui, subprocess, files) run in a desktop; the observation is its AT-SPI tree."""

from __future__ import annotations

from typing import Any

from lwm.domains.base import Domain, check_python
from lwm.registry import register
from lwm.types import Trajectory


@register("domain")
class OS(Domain):
    name = "os"
    title = "OS"
    screen = True
    action_language = "python"
    action_kind = "code"
    example_action = "import pyautogui\npyautogui.hotkey('ctrl', 's')"
    shell_prompt = ">>> "

    def normalize(self, content: Any) -> str:
        return check_python(content, self.name)

    def source(self, trajectory: Trajectory) -> str | None:
        """The desktop apps the collector opened."""
        apps = (trajectory.provenance.extra or {}).get("apps")
        return "os:" + "+".join(sorted(map(str, apps))) if apps else None
