"""The real web environment: Debian's Chromium driven by Playwright, observed as an accessibility tree.

Sites are local and the browser is offline: requests to ``http://shop.lwm.test/`` are answered from
the small apps in ``sites/`` (a shop with search and pagination, a cart, a sign-in and a sign-up
form with validation), requests to ``https://docs.python.org/3/`` from the Python docs installed by
``python3-doc``, and every other request fails as it would with no network. The browser itself runs
in a bubblewrap sandbox with no network namespace and only a private home writable. The observation is the
open tabs, the URL and title, and Playwright's accessibility snapshot with a ref (``e12``) for each
element; actions are BrowserGym calls whose ``bid`` is such a ref.
"""

from __future__ import annotations

import ast
import mimetypes
import re
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

from lwm.envs.base import TextEnv
from lwm.envs.real.sandbox import Sandbox
from lwm.registry import register
from lwm.types import Action, Context, Observation, Provenance

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
SITES = {
    "http://shop.lwm.test/": Path(__file__).parent / "sites",
    "https://docs.python.org/3/": Path("/usr/share/doc/python3/html"),
}
START_URL = "http://shop.lwm.test/index.html"
MAX_TREE = 20_000
ACTION_TIMEOUT_MS = 3_000


def parse_calls(code: str) -> list[tuple[str, list[Any], dict[str, Any]]]:
    """BrowserGym calls as (name, args, kwargs); the domain has already checked names and syntax."""
    calls = []
    for stmt in ast.parse(code).body:
        call = stmt.value  # type: ignore[attr-defined]
        args = [ast.literal_eval(a) for a in call.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
        calls.append((call.func.id, args, kwargs))
    return calls


@register("env", "web")
class WebEnv(TextEnv):
    def __init__(self, context: Context | None = None, *, start_url: str = START_URL, width: int = 1280,
                 height: int = 800, sandbox: bool = True, render_mode: str | None = None):
        self.start_url, self.viewport, self.sandbox = start_url, {"width": width, "height": height}, sandbox
        self._home: Path | None = None
        self._pw: Any = None
        self._browser: Any = None
        self._context: Any = None
        self.page: Any = None
        self.messages: list[str] = []
        super().__init__("web", context, render_mode)

    def provenance(self) -> Provenance:
        version = self._browser.version if self._browser else None
        return Provenance(source="real", environment="web:chromium-playwright", extra={"chromium": version})

    # --- lifecycle -----------------------------------------------------------------------------
    def _launch(self) -> None:
        from playwright.sync_api import sync_playwright

        if self._browser is None:
            if not Path(CHROMIUM).exists():
                raise RuntimeError(f"{CHROMIUM} not found: apt-get install chromium (make setup does this)")
            self._pw = sync_playwright().start()
            executable = self._sandboxed_chromium() if self.sandbox else CHROMIUM
            self._browser = self._pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        if self._context is not None:
            self._context.close()
        self._context = self._browser.new_context(viewport=self.viewport, service_workers="block")
        self._context.route("**/*", self._serve)
        self._context.set_default_timeout(ACTION_TIMEOUT_MS)
        self.page = self._context.new_page()

    def _sandboxed_chromium(self) -> str:
        """A launcher that runs chromium in bubblewrap: no network namespace, only a private home writable.

        Playwright talks to the browser over pipes, and the sites are answered by request routing inside
        the browser, so nothing needs a network; chromium's own sandbox is off (``--no-sandbox``), this one
        replaces it."""
        self._home = Path(tempfile.mkdtemp(prefix="lwm-web-"))
        argv = Sandbox(self._home).argv(CHROMIUM)
        launcher = self._home / "chromium"
        launcher.write_text(f'#!/bin/sh\nexec {shlex.join(argv)} "$@"\n')
        launcher.chmod(0o755)
        return str(launcher)

    def _serve(self, route: Any) -> None:
        """Answer from local files for the known sites; anything else fails as offline."""
        url = route.request.url.split("#", 1)[0].split("?", 1)[0]
        for prefix, root in SITES.items():
            if url.startswith(prefix):
                relative = url[len(prefix):] or "index.html"
                path = (root / relative).resolve()
                if relative.endswith("/"):
                    path = path / "index.html"
                if root.resolve() in path.parents and path.is_file():
                    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
                    route.fulfill(status=200, body=path.read_bytes(), content_type=kind)
                else:
                    route.fulfill(status=404, body=f"<title>404 Not Found</title><h1>Not Found</h1><p>{url}</p>",
                                  content_type="text/html")
                return
        route.abort("internetdisconnected")

    def close(self) -> None:
        for closer in (self._context, self._browser):
            try:
                if closer is not None:
                    closer.close()
            except Exception:  # the browser may already be gone
                pass
        if self._pw is not None:
            self._pw.stop()
        self._pw = self._browser = self._context = self.page = None
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None

    # --- observation -----------------------------------------------------------------------------
    def snapshot(self) -> str:
        pages = self._context.pages
        tabs = "\n".join(f"[{i}] {p.title() or p.url}" + (" (active)" if p is self.page else "")
                          for i, p in enumerate(pages))
        try:
            tree = self.page.locator("body").aria_snapshot(mode="ai", timeout=ACTION_TIMEOUT_MS)
        except Exception as exc:
            tree = f"(no accessibility tree: {str(exc).splitlines()[0]})"
        if len(tree) > MAX_TREE:
            tree = tree[:MAX_TREE].rsplit("\n", 1)[0] + "\n[... tree truncated]"
        return f"# Tabs\n{tabs}\n\nURL: {self.page.url}\nTitle: {self.page.title()}\n\n{tree}"

    def initial_observation(self, seed: int | None, options: dict[str, Any]) -> str:
        self._launch()
        self.messages = []
        self.trajectory = self._new_trajectory()
        self.page.goto(options.get("url", self.start_url))
        return self.snapshot()

    # --- actions ---------------------------------------------------------------------------------
    def transition(self, action: Action) -> Observation:
        error = None
        for name, args, kwargs in parse_calls(action.content):
            try:
                self._do(name, args, kwargs)
            except Exception as exc:  # the action failed in the browser: say so, show the page
                error = re.sub(r"\s+", " ", str(exc).split("Call log:")[0]).strip()[:300]
                break
            try:
                self.page.wait_for_load_state("domcontentloaded", timeout=ACTION_TIMEOUT_MS)
            except Exception:
                pass
        text = self.snapshot()
        if error:
            text = f"Error: {error}\n\n{text}"
        return Observation(content=text, metadata={"url": self.page.url, "action_error": error is not None})

    def _element(self, bid: str) -> Any:
        target = self.page.locator(f"aria-ref={bid}")
        try:
            found = target.count()
        except Exception:  # a malformed ref is simply not on the page
            found = 0
        if not found:
            raise ValueError(f"no element with bid '{bid}' on the page")
        return target

    def _do(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        page = self.page
        if name in {"click", "dblclick", "hover", "focus", "clear", "check", "uncheck"}:
            bid = args[0] if args else kwargs.pop("bid")
            target = self._element(str(bid))
            if name in {"click", "dblclick"}:
                button = args[1] if len(args) > 1 else kwargs.get("button", "left")
                getattr(target, name)(button=button, modifiers=kwargs.get("modifiers") or None)
            else:
                getattr(target, name)()
        elif name == "fill":
            self._element(str(args[0])).fill(str(args[1] if len(args) > 1 else kwargs["value"]))
        elif name == "select_option":
            self._element(str(args[0])).select_option(args[1] if len(args) > 1 else kwargs["options"])
        elif name == "press":
            self._element(str(args[0])).press(args[1] if len(args) > 1 else kwargs["key_comb"])
        elif name == "keyboard_press":
            page.keyboard.press(args[0] if args else kwargs["key"])
        elif name in {"keyboard_type", "keyboard_insert_text"}:
            page.keyboard.type(args[0] if args else kwargs["text"])
        elif name == "scroll":
            page.mouse.wheel(float(args[0]), float(args[1]))
        elif name == "goto":
            page.goto(args[0] if args else kwargs["url"])
        elif name == "go_back":
            page.go_back()
        elif name == "go_forward":
            page.go_forward()
        elif name == "new_tab":
            self.page = self._context.new_page()
        elif name == "tab_close":
            closing = self.page
            pages = [p for p in self._context.pages if p is not closing]
            if not pages:
                raise ValueError("cannot close the last tab")
            closing.close()
            self.page = pages[-1]
        elif name == "tab_focus":
            index = int(args[0] if args else kwargs["index"])
            pages = self._context.pages
            if not 0 <= index < len(pages):
                raise ValueError(f"no tab {index}; {len(pages)} open")
            self.page = pages[index]
            self.page.bring_to_front()
        elif name == "noop":
            page.wait_for_timeout(min(float(args[0] if args else kwargs.get("wait_ms", 500)), 2000))
        elif name in {"send_msg_to_user", "report_infeasible"}:
            self.messages.append(str(args[0] if args else next(iter(kwargs.values()), "")))
        else:
            raise ValueError(f"action {name} is not supported by this environment")
