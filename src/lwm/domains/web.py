"""Web: BrowserGym actions (``click('12')``) over an accessibility tree with element ids."""

from __future__ import annotations

import ast
import re
from typing import Any

from lwm.domains.base import ActionError, Domain
from lwm.registry import register
from lwm.types import Trajectory

BROWSERGYM_ACTIONS = {
    "click", "dblclick", "fill", "select_option", "check", "uncheck", "hover", "focus", "clear", "press",
    "keyboard_press", "keyboard_type", "keyboard_down", "keyboard_up", "keyboard_insert_text", "scroll",
    "mouse_click", "mouse_dblclick", "mouse_move", "mouse_down", "mouse_up", "mouse_drag_and_drop",
    "drag_and_drop", "upload_file", "goto", "go_back", "go_forward", "new_tab", "tab_close",
    "tab_focus", "send_msg_to_user", "report_infeasible", "noop",
}

_URL = re.compile(r"URL: (?:[a-z]+://)?([^/\s]+)")


@register("domain")
class Web(Domain):
    name = "web"
    title = "Web"
    action_language = "python"
    action_kind = "code"
    html_pages = True
    example_action = "click('a12')"
    shell_prompt = "web> "

    def source(self, trajectory: Trajectory) -> str | None:
        """The site's host, from the first page's URL line."""
        first = str((trajectory.provenance.extra or {}).get("initial_observation") or "") or next(
            (t.observation.content for t in trajectory.turns), "")
        host = _URL.search(first)
        return f"web:{host.group(1)}" if host else None

    def normalize(self, content: Any) -> str:
        if not isinstance(content, str) or not content.strip():
            raise ActionError("web actions are BrowserGym calls as text, e.g. click('a12')")
        try:
            tree = ast.parse(content.strip())
        except SyntaxError as exc:
            raise ActionError(f"web action is not a valid BrowserGym call: {exc.msg}") from None
        except ValueError as exc:  # a NUL character
            raise ActionError(f"web action is not a valid BrowserGym call: {exc}") from None
        for stmt in tree.body:
            call = stmt.value if isinstance(stmt, ast.Expr) else None
            if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
                raise ActionError(f"web action lines must be calls like click('a12'), got {ast.unparse(stmt)!r}")
            if call.func.id not in BROWSERGYM_ACTIONS:
                raise ActionError(f"unknown BrowserGym action {call.func.id!r}")
        return content.strip()
