"""Prompt templates: ours (in this folder) or a directory laid out like Qwen-AgentWorld's ``prompts/``.

Layout: ``<dir>/<domain>/system_prompt.txt``, ``system_prompt_compact.txt`` (ours only; a user's
directory may lack it, then the full prompt is used) and ``judge_system_prompt.txt``.

Templates are plain text with three optional placeholders, replaced literally (prompts are full of
JSON braces, so no ``str.format``): ``{context}`` (the session's task, tools, initial state; appended
at the end when the placeholder is absent, as published prompts have none), ``{answer_format}`` and
``{rubric}`` (shared pieces from ``_common/``).
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path

_OURS = files(__name__)


@cache
def _read(root: str | None, *parts: str) -> str | None:
    path = (Path(root) if root else _OURS).joinpath(*parts)
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None


PLACEHOLDERS = ("{context}", "{answer_format}", "{rubric}")


class PromptNotFound(FileNotFoundError, ValueError):
    """A domain's template is not where it should be; the message says where it was looked for and why (a
    ValueError too, so the CLI's one-line handling of bad input covers it)."""


class PromptSet:
    """The templates of one domain, from lwm's own set, a plugin domain's own folder (``own``, laid out the
    same way) or a user's directory."""

    def __init__(self, domain: str, prompts_dir: str | Path | None = None, own: str | Path | None = None):
        self.domain = domain
        chosen = prompts_dir or own
        self.root = str(Path(chosen).expanduser()) if chosen else None

    def _template(self, *names: str) -> str:
        for name in names:
            text = _read(self.root, self.domain, name)
            if text is not None:
                return text
        where = Path(self.root) if self.root else Path(str(_OURS))
        raise PromptNotFound(f"no prompt template {names[-1]} for domain {self.domain!r} under {where}")

    def system(self, context: str, *, compact: bool = False) -> str:
        names = ("system_prompt_compact.txt", "system_prompt.txt") if compact else ("system_prompt.txt",)
        template = self._template(*names)
        answer = _read(None, "_common", "answer_format_compact.txt" if compact else "answer_format.txt")
        text = template.replace("{answer_format}", (answer or "").strip())
        if "{context}" in text:
            return text.replace("{context}", context).strip()
        return f"{text.strip()}\n\n# Session context\n\n{context}"

    def judge(self) -> str:
        rubric = _read(None, "_common", "judge_rubric.txt") or ""
        return self._template("judge_system_prompt.txt").replace("{rubric}", rubric.strip()).strip()
