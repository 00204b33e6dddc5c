"""OS: Python code (pyautogui, subprocess, files) run in a desktop; the observation is its AT-SPI tree."""

from __future__ import annotations

from typing import Any

from lwm.domains.base import Domain, check_python
from lwm.registry import register


@register("domain", "os")
class OS(Domain):
    name = "os"
    title = "OS"
    action_language = "python"
    example_action = "import pyautogui\npyautogui.hotkey('ctrl', 's')"
    shell_prompt = ">>> "

    def normalize(self, content: Any) -> str:
        return check_python(content, self.name)
