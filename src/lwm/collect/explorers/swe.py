"""SWE explorer: reads, searches, runs tests and makes small edits in the repository it has seen."""

from __future__ import annotations

from typing import Any

from lwm.collect.explorers.base import BaseExplorer, find_all, tool
from lwm.registry import register

PY_FILE = r"[\w./-]+\.py\b"
IDENT = r"\bdef (\w+)|\bclass (\w+)"
BROKEN_COMMANDS = ["python -c 'import nosuchmodule'", "git checkout nope", "cat missing.cfg"]


@register("explorer", "swe")
class SWEExplorer(BaseExplorer):
    name = "swe-heuristic-v1"

    def __init__(self, mistake_rate: float = 0.15):
        super().__init__(mistake_rate)
        self.dirs: list[str] = ["."]
        self.files: list[str] = []
        self.names: list[str] = []
        self.lines: dict[str, list[str]] = {}
        self._last: dict[str, Any] = {}
        self.listed: set[str] = set()

    def observe(self, observation: str) -> None:
        last = self._last
        base = last.get("arguments", {}).get("path", ".") if last.get("name") == "list_dir" else "."
        if last.get("name") in {None, "list_dir"}:
            for entry in observation.splitlines():
                path = entry if base == "." else f"{base.rstrip('/')}/{entry}"
                if entry.endswith("/") and path.rstrip("/") not in self.dirs:
                    self.dirs.append(path.rstrip("/"))
                elif "." in entry and " " not in entry and path not in self.files:
                    self.files.append(path)
        found = [] if last.get("name") in {None, "list_dir"} else find_all(PY_FILE, observation)
        for path in found:
            path = path.removeprefix("./")
            if path not in self.files and " " not in path:
                self.files.append(path)
        for a, b in find_all(IDENT, observation):
            if (a or b) not in self.names:
                self.names.append(a or b)
        if last.get("name") == "read_file" and "Error" not in observation[:6]:
            self.lines[last["arguments"]["path"]] = [ln.split("\t", 1)[1] for ln in observation.splitlines()
                                                     if "\t" in ln]

    def act(self, observation: str) -> dict[str, Any]:
        self.observe(observation)
        self._last = self.choose()
        if self._last["name"] == "list_dir":
            self.listed.add(self._last["arguments"].get("path", "."))
        return self._last

    def choose(self) -> dict[str, Any]:
        unlisted = [d for d in self.dirs if d not in self.listed]
        if not any(f.endswith(".py") for f in self.files) and unlisted and len(self.listed) < 5:
            return tool("list_dir", path=unlisted[0])  # find some code before anything else
        if self.mistake():
            return self.pick([
                (2, lambda: tool("read_file", path=f"src/{self.word()}.py")),
                (1, lambda: tool("str_replace", path=self.py(), old_str=f"{self.word()} = 1", new_str="x = 2")),
                (1, lambda: tool("list_dir", path=self.py())),
                (1, lambda: tool("bash", command=self.rng.choice(BROKEN_COMMANDS))),
                (1, lambda: tool("read_file", path=self.py(), start_line=10_000)),
            ])
        return self.pick([
            (2, lambda: tool("list_dir", path=self.rng.choice(self.dirs))),
            (4, self.read),
            (2, lambda: tool("search", pattern=self.rng.choice(self.names) if self.names else "def ")),
            (2, lambda: tool("bash", command=self.rng.choice([
                "python -m pytest -q -p no:cacheprovider 2>&1 | tail -n 15", "git status --short",
                "git log --oneline | head -n 5", "git diff", f"wc -l {self.py()}", f"grep -n 'def ' {self.py()}",
                "python -m pytest -q -p no:cacheprovider -x 2>&1 | tail -n 5", "ls -la"]))),
            (2, self.edit),
        ])

    def py(self) -> str:
        py = [f for f in self.files if f.endswith(".py")]
        return self.rng.choice(py) if py else "setup.py"

    def read(self) -> dict[str, Any]:
        path = self.py() if self.rng.random() < 0.8 or not self.files else self.rng.choice(self.files)
        if self.rng.random() < 0.3:
            start = self.rng.randint(1, 20)
            return tool("read_file", path=path, start_line=start, end_line=start + self.rng.randint(3, 15))
        return tool("read_file", path=path)

    def edit(self) -> dict[str, Any]:
        candidates = [(p, ln) for p, lines in self.lines.items() for ln in lines
                      if ln.strip() and lines.count(ln) == 1 and not ln.strip().startswith("#")]
        if not candidates:
            content = f"# {self.word()}\n\nTODO: {self.word()}\n"
            return tool("write_file", path=f"notes/{self.word()}.md", content=content)
        path, line = self.rng.choice(candidates)
        indent = line[: len(line) - len(line.lstrip())]
        return tool("str_replace", path=path, old_str=line, new_str=f"{indent}# {self.word()}: reviewed\n{line}")
