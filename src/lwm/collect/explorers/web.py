"""Web explorer: clicks, fills and selects elements present in the current tree, with wrong ids too."""

from __future__ import annotations

import re
from typing import Any

from lwm.collect.explorers.base import BaseExplorer
from lwm.envs.real.web import SITES
from lwm.registry import register

ROLES = "link|button|textbox|searchbox|checkbox|radio|combobox|spinbutton"
NODE = re.compile(rf'- ({ROLES}) "([^"]*)"[^\n]*?\[ref=(\w+)\]')
URL = re.compile(r"^URL: (\S+)", re.MULTILINE)
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
            return f"goto('{self.rng.choice(self.pages())}')"
        if self.mistake():
            return self.pick([
                (2, lambda: f"click('e{self.rng.randint(500, 999)}')"),
                (1, lambda: f"goto('{self.missing_page()}')"),
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
            (1, lambda: f"goto('{self.rng.choice(self.pages())}')"),
            (1, lambda: f"hover('{ref}')"),
        ])

    def pages(self) -> tuple[str, ...]:
        return PAGES

    def missing_page(self) -> str:
        return f"http://shop.lwm.test/{self.word()}.html"

    def values(self, name: str) -> list[str]:
        for key in TEXT:
            if key in name or (key == "mail" and "email" in name) or (key == "pass" and "password" in name):
                return TEXT[key]
        return [self.word(), f"{self.word()} {self.word()}", "42"]


@register("explorer", "web-site")
class SiteExplorer(WebExplorer):
    """The web explorer kept to the site an episode starts on (``goto`` targets: its start page and pages of
    the same site it has seen), so that a trajectory's source is one site (corpus-v2). ``web`` stays as it
    was, so corpus-v1 is collected as before."""

    name = "web-site-v1"

    def start(self, rng: Any, context: Any, observation: str) -> None:
        self.seen: list[str] = []
        home = URL.search(observation)
        self.home = home.group(1) if home else PAGES[0]
        self.site = max((prefix for prefix in SITES if self.home.startswith(prefix)), key=len,
                        default=self.home.rsplit("/", 1)[0] + "/")
        self.source = "web:" + self.site.split("/")[2]
        super().start(rng, context, observation)

    def observe(self, observation: str) -> None:
        for url in URL.findall(observation):
            if url.startswith(self.site) and url not in self.seen:
                self.seen.append(url)

    def act(self, observation: str) -> str:
        self.observe(observation)
        return super().act(observation)

    def pages(self) -> tuple[str, ...]:
        return (self.home, *self.seen[-8:])

    def missing_page(self) -> str:
        return f"{self.site}{self.word()}.html"
