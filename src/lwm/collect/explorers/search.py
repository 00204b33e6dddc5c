"""Search explorer: queries from topics and from text it has read, opens results, takes notes."""

from __future__ import annotations

import re
from typing import Any

from lwm.collect.explorers.base import BaseExplorer, find_all, tool
from lwm.registry import register

TOPICS = ("python asyncio timeout", "fork system call", "file permissions chmod", "unicode strings python",
          "signal handling", "socket programming", "regular expressions", "json module", "memory leak",
          "hacker", "compiler", "process scheduling", "dataclasses", "pathlib", "tcp ip", "kludge",
          "virtual memory", "epoll", "subprocess", "context manager", "daemon", "garbage collection")
URL = r"\((https?://[^)\s]+)\)"


@register("explorer", "search")
class SearchExplorer(BaseExplorer):
    name = "search-heuristic-v1"

    def __init__(self, mistake_rate: float = 0.15):
        super().__init__(mistake_rate)
        self.urls: list[str] = []
        self.terms: list[str] = []
        self.keys: list[str] = []

    def observe(self, observation: str) -> None:
        for url in find_all(URL, observation):
            if url not in self.urls:
                self.urls.append(url)
        words = [w.lower() for w in re.findall(r"\b[A-Za-z][a-z]{4,14}\b", observation)]
        for word in words[:: max(1, len(words) // 20) or 1]:
            if word not in self.terms:
                self.terms.append(word)
        del self.terms[:-100]

    def query(self) -> str:
        if self.terms and self.rng.random() < 0.5:
            return " ".join(self.rng.sample(self.terms, k=min(2, len(self.terms))))
        return self.rng.choice(TOPICS)

    def act(self, observation: str) -> dict[str, Any]:
        self.observe(observation)
        if self.mistake():
            return self.pick([
                (2, lambda: tool("web_extractor", url=f"https://docs.python.org/3/library/{self.word()}.html")),
                (1, lambda: tool("dict_memory", operation="retrieve", key=f"{self.word()}_note")),
                (1, lambda: tool("web_search", query="qzxv " + self.word() + "zz")),
            ])
        return self.pick([
            (4, lambda: tool("web_search", query=self.query())),
            (1, lambda: tool("web_search", queries=[self.query(), self.query()])),
            (3, lambda: tool("web_extractor", url=self.rng.choice(self.urls)) if self.urls
             else tool("web_search", query=self.query())),
            (2, self.memory),
        ])

    def memory(self) -> dict[str, Any]:
        if self.keys and self.rng.random() < 0.5:
            op = self.rng.choice(["retrieve", "update", "retrieve_all", "remove"])
            key = self.rng.choice(self.keys)
            if op == "remove":
                self.keys.remove(key)
            return tool("dict_memory", operation=op, key=key, value=self.query()) if op == "update" else \
                tool("dict_memory", operation=op, key=key)
        key = f"{self.word()}_{len(self.keys)}"
        self.keys.append(key)
        value = self.rng.choice(self.urls) if self.urls else self.query()
        return tool("dict_memory", operation="add", key=key, value=value)
