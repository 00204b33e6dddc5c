"""MCP explorer: calls the server's tools with arguments drawn from their schemas and earlier results."""

from __future__ import annotations

import json
import re
from typing import Any

from lwm.collect.explorers.base import BaseExplorer
from lwm.registry import register

SKIP_TOOLS = re.compile(r"sleep|long|wait|sampl|elicit|trigger|notification|zip", re.IGNORECASE)
EXAMPLE_SHARE = 0.85
"""How often a tool with examples below is called with one (filled in) rather than schema-drawn arguments."""
TIMEZONES = ("UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo", "Australia/Sydney", "America/Sao_Paulo")
REPO = "/home/user/work"
"""The episode's folder as the sandbox mounts it: the git server's repository, the filesystem server's root."""


def _examples(e: BaseExplorer) -> dict[str, list[dict[str, Any]]]:
    """Arguments a real agent would send to tools whose arguments a schema cannot suggest (SQL, code, a time
    zone, a path in the server's folder): keyed by tool name, drawn fresh each call so values vary."""
    word, n = e.word(), e.rng.randint(1, 99)
    return {
        "create_table": [{"query": f"CREATE TABLE IF NOT EXISTS {word}s (id INTEGER PRIMARY KEY, name TEXT, "
                                   "qty INTEGER)"},
                         {"query": "CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY, name TEXT, price REAL)"}],
        "write_query": [{"query": f"INSERT INTO items (name, price) VALUES ('{word}', {n}.5)"},
                        {"query": f"UPDATE items SET price = price * 2 WHERE name = '{word}'"},
                        {"query": f"DELETE FROM items WHERE price > {n}"}],
        "read_query": [{"query": "SELECT * FROM items"}, {"query": "SELECT count(*) AS n, avg(price) FROM items"},
                       {"query": f"SELECT name FROM items WHERE price < {n} ORDER BY price"},
                       {"query": "SELECT name FROM sqlite_master WHERE type = 'table'"}],
        "describe_table": [{"table_name": "items"}],
        "run-code": [{"languageId": "python", "code": f"print(sum(range({n})))"},
                     {"languageId": "python", "code": f"import json; print(json.dumps({{'{word}': {n}}}))"},
                     {"languageId": "javascript", "code": f"console.log([{n}, 2, 3].map(x => x * 2))"},
                     {"languageId": "javascript", "code": f"console.log('{word}'.toUpperCase())"},
                     {"languageId": "shellscript", "code": f"echo {word}; ls; date +%Y"},
                     {"languageId": "perl", "code": f"print join(',', 1..{n % 9 + 2}), \"\\n\";"}],
        "get_current_time": [{"timezone": zone} for zone in TIMEZONES],
        "convert_time": [{"source_timezone": TIMEZONES[n % 6], "time": f"{n % 24:02d}:{n % 60:02d}",
                          "target_timezone": TIMEZONES[(n + 1 + n // 7) % 6]}],
        **{name: [{"repo_path": REPO}] for name in ("git_status", "git_diff_unstaged", "git_diff_staged",
                                                    "git_branch", "git_log")},
        "git_diff": [{"repo_path": REPO, "target": "HEAD"}, {"repo_path": REPO, "target": "main"}],
        "git_show": [{"repo_path": REPO, "revision": "HEAD"}],
        "git_add": [{"repo_path": REPO, "files": ["notes.txt"]}, {"repo_path": REPO, "files": ["app.py", "notes.txt"]}],
        "git_commit": [{"repo_path": REPO, "message": f"Update {word} notes"}],
        "git_create_branch": [{"repo_path": REPO, "branch_name": f"{word}-{n}"}],
        "git_checkout": [{"repo_path": REPO, "branch_name": "main"}],
        "git_reset": [{"repo_path": REPO}],
        "write_file": [{"path": f"{REPO}/{word}.txt", "content": f"{word} {n}\n"},
                       {"path": f"{REPO}/notes.md", "content": f"# Notes\n\n- todo: {word}\n"}],
        **{name: [{"path": f"{REPO}/notes.md"}, {"path": f"{REPO}/{word}.txt"}] for name in ("read_file",
                                                                                          "read_text_file")},
        **{name: [{"path": REPO}] for name in ("list_directory", "list_directory_with_sizes", "directory_tree",
                                               "get_file_info")},
        "create_directory": [{"path": f"{REPO}/{word}"}],
        "search_files": [{"path": REPO, "pattern": "*.txt"}, {"path": REPO, "pattern": word}],
        "move_file": [{"source": f"{REPO}/notes.md", "destination": f"{REPO}/{word}.md"}],
        "edit_file": [{"path": f"{REPO}/notes.md", "edits": [{"oldText": "todo", "newText": "done"}]}],
        # corpus-v2's later servers (entries draw nothing more, so the earlier servers' episodes are unchanged)
        "calculate": [{"expression": f"{n} * {n % 7 + 2} + 1"}, {"expression": f"({n} + 5) / 3"},
                      {"expression": f"2 ** {n % 12}"}, {"expression": f"{n} % 7 - {n} // 7"}],
        "query": [{"query": "CREATE TABLE IF NOT EXISTS items (id INTEGER, name VARCHAR, price DOUBLE)"},
                  {"query": f"INSERT INTO items VALUES ({n}, '{word}', {n}.5)"},
                  {"query": "SELECT * FROM items ORDER BY price"},
                  {"query": "SELECT count(*) AS n, round(avg(price), 2) AS avg_price FROM items"},
                  {"query": f"SELECT name FROM items WHERE price > {n}"},
                  {"query": "SELECT table_name FROM information_schema.tables"},
                  {"query": f"SELECT i, i * i AS square FROM range({n % 6 + 2}) t(i)"}],
        "shell_execute": [{"command": ["ls", "-la"]}, {"command": ["echo", word]},
                          {"command": ["touch", f"{word}.txt"]}, {"command": ["find", ".", "-name", "*.txt"]},
                          {"command": ["wc", "-l"], "stdin": f"{word}\n{n}\n"},
                          {"command": ["sort"], "stdin": f"{word}\n{n}\nalpha\n"},
                          {"command": ["mkdir", "-p", word]}, {"command": ["cat", f"{word}.txt"]},
                          {"command": ["pwd"]}],
    }


@register("explorer", "mcp")
class MCPExplorer(BaseExplorer):
    name = "mcp-schema-v1"

    def __init__(self, mistake_rate: float = 0.15):
        super().__init__(mistake_rate)
        self.seen: list[str] = []

    def observe(self, observation: str) -> None:
        """Keep short strings from results: names, ids, paths to reuse as arguments later."""
        try:
            values = _strings(json.loads(observation))
        except ValueError:
            values = re.findall(r"[\w./-]{3,40}", observation)
        for value in values:
            if 2 < len(value) <= 60 and value not in self.seen:
                self.seen.append(value)
        del self.seen[:-200]

    def tools(self) -> list[dict[str, Any]]:
        usable = [t for t in self.context.tools if not SKIP_TOOLS.search(t.get("name", ""))]
        return usable or list(self.context.tools)

    def act(self, observation: str) -> dict[str, Any]:
        self.observe(observation)
        tools = self.tools()
        if not tools:
            return {"name": "list_tools", "arguments": {}}
        tool = self.rng.choice(tools)
        args = self.arguments(tool)
        if self.mistake():
            return self.pick([
                (2, lambda: {"name": tool["name"], "arguments": {}}),  # required arguments missing
                (1, lambda: {"name": f"{tool['name']}_v2", "arguments": args}),  # a tool that does not exist
                (2, lambda: {"name": tool["name"], "arguments": {k: 12345 for k in args} or {"x": 1}}),  # wrong types
            ])
        return {"name": tool["name"], "arguments": args}

    def shown(self, schema: dict[str, Any]) -> dict[str, Any] | None:
        """Now and then (``EXAMPLE_SHARE``) arguments the schema shows as JSON Schema ``examples`` (lwm's Python
        tools take them from the docstring's calls); drawn only where there are some, so servers without them
        are explored exactly as before."""
        examples = [e for e in schema.get("examples") or () if isinstance(e, dict)]
        if examples and self.rng.random() < EXAMPLE_SHARE:
            return json.loads(json.dumps(self.rng.choice(examples)))
        return None

    def arguments(self, tool: dict[str, Any]) -> dict[str, Any]:
        schema = tool.get("inputSchema") or tool.get("input_schema") or {}
        if (shown := self.shown(schema)) is not None:
            return shown
        return self.value(schema, depth=0) if schema.get("properties") else {}

    def text(self) -> str:
        if self.seen and self.rng.random() < 0.6:
            return self.rng.choice(self.seen)
        return self.word() + (f"_{self.rng.randint(1, 9)}" if self.rng.random() < 0.3 else "")

    def value(self, schema: dict[str, Any], depth: int) -> Any:
        if "enum" in schema:
            return self.rng.choice(schema["enum"])
        if "default" in schema and self.rng.random() < 0.3:
            return schema["default"]
        kind = schema.get("type", "string")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "string")
        if kind == "object" or "properties" in schema:
            props = schema.get("properties", {})
            required = set(schema.get("required", []))
            return {k: self.value(v, depth + 1) for k, v in props.items()
                    if k in required or (depth < 2 and self.rng.random() < 0.5)}
        if kind == "array":
            count = self.rng.randint(1, 3) if depth < 2 else 1
            return [self.value(schema.get("items", {}), depth + 1) for _ in range(count)]
        if kind == "integer":
            low, high = schema.get("minimum", 0), schema.get("maximum", 20)
            return self.rng.randint(int(low), int(max(low, min(high, low + 50))))
        if kind == "number":
            return round(self.rng.uniform(schema.get("minimum", 0), schema.get("maximum", 100)), 2)
        if kind == "boolean":
            return self.rng.random() < 0.5
        return self.text()


@register("explorer", "mcp-agent")
class AgentLikeMCPExplorer(MCPExplorer):
    """Mostly the calls an agent would make where the schema cannot say what a sensible value is (SQL, code, a
    time zone, a path in the server's folder): corpus-v1's schema explorer sent random words there, so whole
    servers answered (almost) nothing but errors (time and git 100%, filesystem 74%). corpus-v2's MCP parts
    use this one (``explorer:mcp-agent``); the plain ``mcp`` explorer stays as it was, so corpus-v1 is
    collected exactly as before."""

    name = "mcp-agent-v1"

    def arguments(self, tool: dict[str, Any]) -> dict[str, Any]:
        # the examples (and their random values) are drawn on every call, examples or not, so the random
        # sequence, and what corpus-v2 recorded with it, do not depend on which tools a server has
        examples = _examples(self).get(tool["name"])
        if examples and self.rng.random() < EXAMPLE_SHARE:
            return self.rng.choice(examples)
        return super().arguments(tool)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


EXPRESSIONS = ("x**2 + 2*x + 1", "sin(x)*cos(x)", "x*y - 3", "(x + 1)/(x - 1)", "exp(2*x)", "x**3 - 6*x**2 + 11*x - 6",
               "sqrt(x**2 + y**2)", "log(x) + 1", "2*x + 3*y", "x**4 - 1")
TEXTS = ("The quick brown fox jumps over the lazy dog.", "hello world", "Hello, World! 123",
         "name=alice; role=admin", "2024-03-15T10:30:00", "café naïve résumé", "  padded text  ",
         "one,two,three", "https://example.org/docs/index.html?q=lwm#top", "Lorem ipsum dolor sit amet")
EXPRESSION_NAMES = frozenset("expr f g e expression p poly eq equation func function formula".split())
TEXT_NAMES = frozenset("s string text txt line source data value url date_string markdown html doc".split())
OPTIONAL_SHARE = 0.15


@register("explorer", "mcp-python")
class PythonToolsExplorer(AgentLikeMCPExplorer):
    """Calls lwm's Python tools (``lwm.envs.real.pytools``) as a programmer would: a docstring's own example call
    most of the time where there is one, else the required arguments (an optional one now and then), an
    expression where the parameter takes a formula, a sentence where it takes text, a few numbers for a
    sequence. The schema explorer's random words and optional flags made most numpy and sympy calls errors."""

    name = "mcp-python-v1"

    def arguments(self, tool: dict[str, Any]) -> dict[str, Any]:
        schema = tool.get("inputSchema") or {}
        if (shown := self.shown(schema)) is not None:
            return shown
        required = set(schema.get("required") or ())
        return {name: self.argument(name, spec) for name, spec in (schema.get("properties") or {}).items()
                if name in required or self.rng.random() < OPTIONAL_SHARE}

    def argument(self, name: str, spec: dict[str, Any]) -> Any:
        kind = spec.get("type")
        if "default" in spec and spec["default"] is not None and self.rng.random() < 0.3:
            return spec["default"]
        if kind == "string" and name.lower() in EXPRESSION_NAMES:
            return self.rng.choice(EXPRESSIONS)
        if kind == "string" and (name.lower() in TEXT_NAMES or self.rng.random() < 0.3):
            return self.rng.choice(TEXTS)
        if kind == "array" and (spec.get("items") or {}).get("type", "number") in ("number", "integer"):
            return [self.rng.choice((self.rng.randint(-5, 20), round(self.rng.uniform(0, 10), 2)))
                    for _ in range(self.rng.randint(2, 6))]
        if kind == "integer":
            return self.rng.randint(0, 12)
        if kind == "number":
            return self.rng.choice((self.rng.randint(1, 10), round(self.rng.uniform(-5, 20), 2)))
        return self.value(spec, depth=1)
