"""What every domain shares: how actions are checked and rendered, and where prompts come from.

A domain is data plus a few small hooks. Subclasses set the class attributes and override
``normalize`` (check an action's content and put it in canonical form) and, where typing a command
is natural, ``from_shell`` (turn one line typed in ``lwm shell`` into an action). Everything else follows
from the class: its Gymnasium ids (``lwm/<Title>-v0``), whether the agent reads its screen from the bottom
(``screen``), which environment a trajectory came from (``source``), and its prompts, read from a
``prompts/<name>/`` folder beside the domain's module when there is one (a plugin domain is one module plus
that folder), else from lwm's own.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from lwm.parsing import OBSERVATION_MARKER, OBSERVATION_TAG, ParsedAnswer, parse_answer
from lwm.prompts import PLACEHOLDERS, PromptNotFound, PromptSet
from lwm.registry import is_builtin
from lwm.types import Action, Context, JSONValue, Trajectory, well_formed


@cache
def _prompts_beside(cls: type) -> Path | None:
    module = sys.modules.get(cls.__module__)
    folder = Path(module.__file__).parent / "prompts" if module and module.__file__ else None
    return folder if folder and (folder / cls.name).is_dir() else None


class ActionError(ValueError):
    """An action that does not fit its domain's format; the message says what was expected."""


class Domain:
    name: ClassVar[str]
    title: ClassVar[str]
    action_language: ClassVar[str] = "json"
    """How the action is fenced in the conversation: ``json`` or ``python``."""
    html_pages: ClassVar[bool] = False
    """Its observations may be HTML: an HTML answer is in form where the session's observations are HTML, or
    while it has none (``lwm.forms.wants_html``)."""
    action_kind: ClassVar[str] = "tool_call"
    """What an action is, for code that drives any domain (an agent's prompt, a trainer's tools, the shell):
    ``tool_call`` (a JSON ``{"name", "arguments"}``), ``keystrokes`` (a list of keys with waits), ``code`` (a
    Python snippet) or ``ui`` (a JSON UI action). Nothing outside a domain's module branches on its name."""
    example_action: ClassVar[JSONValue]
    shell_prompt: ClassVar[str] = "> "
    initial_state: ClassVar[str] = ""
    """What a session shows before the first action when its context gives nothing."""
    response_tag: ClassVar[str] = OBSERVATION_TAG
    marker: ClassVar[str] = OBSERVATION_MARKER
    screen: ClassVar[bool] = False
    """The observation is a screen whose newest part is at the bottom (an agent reads its last lines)."""

    @classmethod
    def gym_name(cls) -> str:
        """The name in the domain's Gymnasium ids: its title without spaces or punctuation."""
        return re.sub(r"\W", "", cls.title)

    @classmethod
    def prompts_root(cls) -> Path | None:
        """The ``prompts/`` folder beside the domain's module, if it has ``<name>/`` templates; else None
        (lwm's own). Looked up once per class: every simulated step builds a system prompt."""
        return _prompts_beside(cls)

    def source(self, trajectory: Trajectory) -> str | None:
        """The environment ``trajectory`` came from, read from what this domain records; None: the
        environment its provenance names (``lwm.data.sources``)."""
        return None

    # --- actions -------------------------------------------------------------------------------
    def normalize(self, content: Any) -> JSONValue:
        return content

    def action(self, content: Any) -> Action:
        """An Action from already-decoded content, checked; raises ActionError. Text that is not Unicode (a lone
        surrogate) is made well-formed first, so the domain checks what will run and be recorded."""
        if isinstance(content, Action):
            content = content.content
        return Action(content=self.normalize(well_formed(content)))

    def action_from_text(self, text: str) -> Action:
        """An Action from the text a user or an agent wrote (JSON for JSON domains, code otherwise)."""
        if self.action_language != "json":
            return self.action(text)
        try:
            content = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ActionError(
                f"{self.name} actions are JSON, e.g. {json.dumps(self.example_action)}; "
                f"could not parse {text[:80]!r}: {exc.msg} at position {exc.pos}"
            ) from None
        return self.action(content)

    def from_shell(self, line: str) -> Action:
        return self.action_from_text(line)

    # --- conversation --------------------------------------------------------------------------
    def format_action(self, action: Action) -> str:
        content = action.content
        if self.action_language == "json" or not isinstance(content, str):
            return json.dumps(content, ensure_ascii=False, indent=2)
        return content

    def fenced(self, action: Action) -> str:
        """``action`` in a fenced block: ``json``, or ``python`` for a code domain's code."""
        fence = "json" if self.action_language == "json" or not isinstance(action.content, str) else "python"
        return f"```{fence}\n{self.format_action(action)}\n```"

    def render_action(self, action: Action, turn: int) -> str:
        """The user message for turn ``turn`` (1-based), in AgentWorldBench's turn style."""
        return f"### Turn {turn}\n\n**Action:**\n{self.fenced(action)}"

    def render_observation(self, text: str) -> str:
        """The assistant message that carries a real (or accepted) observation in the history."""
        return f"{self.marker}\n{text}"

    def parse(self, raw: str, reasoning: str | None = None) -> ParsedAnswer:
        return parse_answer(raw, self.response_tag, reasoning)

    # --- prompts -------------------------------------------------------------------------------
    def prompts(self, prompts_dir: str | Path | None = None) -> PromptSet:
        """The templates of ``prompts_dir`` (a user's), else the domain's own, else lwm's."""
        own = self.prompts_root()
        if prompts_dir is None and own is None and not is_builtin(type(self)):
            module = sys.modules.get(type(self).__module__)
            beside = Path(module.__file__).parent / "prompts" / self.name if module and module.__file__ else "?"
            raise PromptNotFound(
                f"domain {self.name!r} ({type(self).__module__}) has no prompts: {beside}/system_prompt.txt is "
                f"missing. Ship the folder with the package (setuptools: [tool.setuptools.package-data] "
                f"{type(self).__module__.split('.')[0]} = [\"prompts/*/*.txt\"]); a template may use "
                f"{', '.join(PLACEHOLDERS)}")
        return PromptSet(self.name, prompts_dir, own=own)

    def system_prompt(self, context: Context, *, compact: bool = False, prompts_dir: str | Path | None = None) -> str:
        """The world model's system prompt; a prompt carried by the data itself wins."""
        if context.system_prompt:
            return context.system_prompt
        return self.prompts(prompts_dir).system(self.render_context(context, compact=compact), compact=compact)

    def judge_prompt(self, prompts_dir: str | Path | None = None) -> str:
        return self.prompts(prompts_dir).judge()

    def render_context(self, context: Context, *, compact: bool = False) -> str:
        parts: list[str] = []
        if context.task:
            parts.append(f"## Task of the agent\n{context.task}")
        if context.tools:
            parts.append("## Available tools\n" + render_tools(context.tools, compact=compact))
        if context.initial_state:
            parts.append(f"## Initial state\n{context.initial_state}")
        for key, value in context.extra.items():
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            parts.append(f"## {key.replace('_', ' ').capitalize()}\n{text}")
        return "\n\n".join(parts) if parts else "(no further context was given)"


def render_tools(tools: list[dict[str, Any]], *, compact: bool) -> str:
    """Tool definitions as JSON (full) or one line per tool (compact): its parameters, the shape of what it
    returns where the tool declares an output schema, and the first line of its description."""
    if not compact:
        return "```json\n" + json.dumps(tools, ensure_ascii=False, indent=2) + "\n```"
    lines = []
    for tool in tools:
        spec = tool.get("function", tool)
        schema = spec.get("inputSchema") or spec.get("input_schema") or spec.get("parameters") or {}
        params = ", ".join(schema.get("properties", {}))
        desc = (spec.get("description") or "").strip().splitlines()
        returns = spec.get("outputSchema") or spec.get("output_schema")
        shape = f" -> {output_shape(returns)}" if isinstance(returns, dict) else ""
        lines.append(f"- {spec.get('name', '?')}({params}){shape}" + (f": {desc[0]}" if desc else ""))
    return "\n".join(lines)


def output_shape(schema: dict[str, Any], depth: int = 0, root: dict[str, Any] | None = None) -> str:
    """A JSON Schema as the skeleton of a value (``{"n": number, "tags": [string]}``): what a tool the world
    model never saw returns, in the few tokens a compact prompt can spend (MCP servers may declare an
    ``outputSchema``; issue 44). Local ``$ref``s are followed; of ``anyOf``/``oneOf``, the first choice."""
    root = root if root is not None else schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/") and depth < 3:
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        return output_shape(target, depth + 1, root) if isinstance(target, dict) else "value"
    choices = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return output_shape(choices[0], depth, root)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    props = schema.get("properties")
    if isinstance(props, dict) and props and depth < 3:
        return "{" + ", ".join(f"{json.dumps(k)}: {output_shape(v if isinstance(v, dict) else {}, depth + 1, root)}"
                               for k, v in props.items()) + "}"
    if kind == "array" and depth < 3:
        items = schema.get("items")
        return "[" + (output_shape(items, depth + 1, root) if isinstance(items, dict) else "") + "]"
    if isinstance(schema.get("enum"), list):
        return " | ".join(json.dumps(v) for v in schema["enum"][:5])
    return kind if isinstance(kind, str) else "value"


def tool_call(content: Any, domain: str, allowed: set[str] | None = None) -> dict[str, Any]:
    """Canonical ``{"name", "arguments"}`` from the common spellings of a JSON tool call."""
    if isinstance(content, str):
        try:
            content = json.loads(content)
        except json.JSONDecodeError:
            pass
    if not isinstance(content, dict):
        raise ActionError(f'{domain} actions are tool calls like {{"name": ..., "arguments": {{...}}}}')
    fn = content.get("function") if isinstance(content.get("function"), dict) else content
    name = fn.get("name") or fn.get("tool") or fn.get("tool_name")
    if not isinstance(name, str) or not name:
        raise ActionError(f"{domain} tool call has no tool name (expected a 'name' field): {content}")
    args = fn.get("arguments", fn.get("args", fn.get("parameters", {})))
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            raise ActionError(f"{domain} tool call {name!r}: arguments are not valid JSON: {exc.msg}") from None
    if not isinstance(args, dict):
        raise ActionError(f"{domain} tool call {name!r}: arguments must be a JSON object")
    if allowed is not None and name not in allowed:
        raise ActionError(f"{domain} has no tool {name!r}; tools: {', '.join(sorted(allowed))}")
    return {"name": name, "arguments": args}


def shell_tool_call(line: str, domain: str) -> Any:
    """``name {"k": v}`` or ``name`` or a whole JSON call, as typed in ``lwm shell``."""
    line = line.strip()
    if line.startswith("{"):
        return line
    name, _, rest = line.partition(" ")
    return {"name": name, "arguments": rest.strip() or "{}"}


def check_python(code: Any, domain: str) -> str:
    if not isinstance(code, str) or not code.strip():
        raise ActionError(f"{domain} actions are Python code as a non-empty string")
    try:
        ast.parse(code)
    except SyntaxError as exc:
        raise ActionError(f"{domain} action is not valid Python (line {exc.lineno}): {exc.msg}") from None
    except ValueError as exc:  # a NUL character: found by the fuzz test, was an exception out of step()
        raise ActionError(f"{domain} action is not valid Python: {exc}") from None
    return code
