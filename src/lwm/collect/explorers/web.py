"""Web explorer: clicks, fills and selects elements present in the current tree, with wrong ids too."""

from __future__ import annotations

import re

from lwm.collect.explorers.base import BaseExplorer
from lwm.registry import register

ROLES = "link|button|textbox|searchbox|checkbox|radio|combobox|spinbutton"
NODE = re.compile(rf'- ({ROLES}) "([^"]*)"[^\n]*?\[ref=(\w+)\]')
PAGES = ("http://shop.lwm.test/index.html", "http://shop.lwm.test/products.html",
         "http://shop.lwm.test/cart.html", "http://shop.lwm.test/login.html", "http://shop.lwm.test/signup.html",
         "https://docs.python.org/3/library/index.html", "https://docs.python.org/3/tutorial/index.html")
TEXT = {"user": ["ada", "bob", "x"], "pass": ["lovelace1815", "secret", "12345678"],
        "mail": ["ada@example.org", "not-an-email"], "search": ["tea", "bread", "oil", "zzz", "rice"],
        "quantity": ["2", "0", "25"]}


@register("explorer", "web")
class WebExplorer(BaseExplorer):
    name = "web-heuristic-v1"

    def act(self, observation: str) -> str:
        nodes = NODE.findall(observation)
        if not nodes:  # a blank or error page: go somewhere real
            return f"goto('{self.rng.choice(PAGES)}')"
        if self.mistake():
            return self.pick([
                (2, lambda: f"click('e{self.rng.randint(500, 999)}')"),
                (1, lambda: f"goto('http://shop.lwm.test/{self.word()}.html')"),
                (1, lambda: "goto('https://www.example.com/')"),
                (1, lambda: "go_back()"),
            ])
        role, name, ref = self.rng.choice(nodes)
        if role in ("textbox", "searchbox", "spinbutton"):
            text = self.rng.choice(self.values(name.lower()))
            submit = "\nkeyboard_press('Enter')" if self.rng.random() < 0.5 else ""
            return f"fill('{ref}', '{text}'){submit}"
        if role == "combobox":
            return f"select_option('{ref}', '{self.rng.choice(['France', 'Germany', 'Italy', 'Spain'])}')"
        if role in ("checkbox", "radio"):
            return f"check('{ref}')" if self.rng.random() < 0.7 else f"uncheck('{ref}')"
        return self.pick([
            (6, lambda: f"click('{ref}')"),
            (1, lambda: f"scroll(0, {self.rng.choice([300, 600, -300])})"),
            (1, lambda: f"goto('{self.rng.choice(PAGES)}')"),
            (1, lambda: f"hover('{ref}')"),
        ])

    def values(self, name: str) -> list[str]:
        for key in TEXT:
            if key in name or (key == "mail" and "email" in name) or (key == "pass" and "password" in name):
                return TEXT[key]
        return [self.word(), f"{self.word()} {self.word()}", "42"]
