"""OS explorer: clicks on elements the tree shows, types, uses shortcuts, files and programs."""

from __future__ import annotations

import re

from lwm.collect.explorers.base import BaseExplorer
from lwm.registry import register

NODE = re.compile(r"^\s*(push button|menu item|menu|toggle button|check box|text|page tab) '([^']*)'.*?"
                  r"\((\d+), (\d+), (\d+), (\d+)\)", re.MULTILINE)
PRELUDE = "import pyautogui\npyautogui.FAILSAFE = False\n"
HOTKEYS = [("ctrl", "a"), ("ctrl", "z"), ("ctrl", "c"), ("ctrl", "v"), ("ctrl", "f"), ("escape",), ("ctrl", "n")]


@register("explorer", "os")
class OSExplorer(BaseExplorer):
    name = "os-heuristic-v1"

    def act(self, observation: str) -> str:
        nodes = [(role, name, int(x) + int(w) // 2, int(y) + int(h) // 2)
                 for role, name, x, y, w, h in NODE.findall(observation) if int(w) > 0 and int(h) > 0]
        if self.mistake():
            return self.pick([
                (2, lambda: f"print(open('{self.word()}.txt').read())"),
                (1, lambda: "import subprocess\nsubprocess.run(['no-such-app'])"),
                (1, lambda: PRELUDE + "pyautogui.click(5000, 5000)\nprint(pyautogui.position())"),
            ])
        return self.pick([
            (4, lambda: self.click(nodes)),
            (3, lambda: PRELUDE + f"pyautogui.write({' '.join(self.word() for _ in range(3))!r}, interval=0.01)"),
            (2, lambda: PRELUDE + f"pyautogui.hotkey{self.rng.choice(HOTKEYS)!r}".replace(",)", ")")),
            (1, lambda: PRELUDE + "pyautogui.press('enter')"),
            (1, lambda: f"from pathlib import Path\nPath('{self.word()}.txt').write_text({self.word()!r})\n"
                        "print(sorted(p.name for p in Path('.').glob('*.txt')))"),
            (1, lambda: "import subprocess\nprint(subprocess.run(['ls', '-la'], capture_output=True, "
                        "text=True).stdout)"),
        ])

    def click(self, nodes: list[tuple[str, str, int, int]]) -> str:
        if not nodes:
            return PRELUDE + "pyautogui.click(320, 240)"
        role, name, x, y = self.rng.choice(nodes)
        return PRELUDE + f"pyautogui.click({x}, {y})  # {role} {name!r}"
