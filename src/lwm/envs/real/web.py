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
import gzip
import mimetypes
import os
import queue
import re
import shlex
import signal
import threading
from pathlib import Path
from typing import Any

from lwm.envs.base import TextEnv
from lwm.envs.real.docsets import DOC_SETS
from lwm.envs.real.enclosure import new_work_folder
from lwm.envs.real.process import Reaper
from lwm.envs.real.sandbox import Limits, Sandbox, bwrap_path
from lwm.provision import located
from lwm.registry import register
from lwm.types import Action, Context, Observation, Provenance

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
SITES = {
    "http://shop.lwm.test/": Path(__file__).parent / "sites",
    # Documentation sets Debian ships (lwm setup web installs them), each at its public address.
    **{doc.url: doc.installed for doc in DOC_SETS.values()},
}
START_PAGES = {"shop": "http://shop.lwm.test/index.html",
               **{name: doc.url + doc.start for name, doc in DOC_SETS.items()}}
"""Where an episode on each local site starts (``lwm collect --env-option start_url=...``)."""
START_URL = "http://shop.lwm.test/index.html"
MAX_TREE = 20_000
STEP_TIMEOUT = 30.0
"""Seconds one step (its actions and the snapshot) may take before the browser is declared hung."""
ACTION_TIMEOUT_MS = 3_000
BROWSER_LIMITS = Limits(memory_mb=None, processes=1024, episode_memory_mb=4096)
"""Chromium reserves terabytes of address space (V8's cage), which RLIMIT_AS would refuse; its many threads
count as processes."""


def parse_calls(code: str) -> list[tuple[str, list[Any], dict[str, Any]]]:
    """BrowserGym calls as (name, args, kwargs); the domain has already checked names and syntax."""
    calls = []
    for stmt in ast.parse(code).body:
        call = stmt.value  # type: ignore[attr-defined]
        args = [ast.literal_eval(a) for a in call.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
        calls.append((call.func.id, args, kwargs))
    return calls


def _driver_pids() -> set[int]:
    """This process's Playwright drivers (node ... run-driver)."""
    me, found = str(os.getpid()).encode(), set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "stat").read_bytes().rsplit(b") ", 1)[1].split()[1] == me \
                    and b"run-driver" in (entry / "cmdline").read_bytes():
                found.add(int(entry.name))
        except (OSError, IndexError):
            pass
    return found


class BrowserHung(RuntimeError):
    """The browser did not answer a call within its deadline and was killed."""


class BrowserThread:
    """One daemon thread that makes every Playwright call (its sync API belongs to the thread that
    started it), so the caller can wait with a deadline and walk away from a call that never returns."""

    def __init__(self) -> None:
        self._jobs: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="lwm-web", daemon=True)
        self._thread.start()
        self.alive = True

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, args, answer = job
            try:
                answer.put((True, fn(*args)))
            except BaseException as exc:  # handed to the caller, raised there
                answer.put((True, exc))

    def run(self, fn: Any, args: tuple, timeout: float) -> tuple[bool, Any]:
        """(finished, result or exception); ``(False, None)`` past the deadline."""
        answer: queue.Queue = queue.Queue(maxsize=1)
        self._jobs.put((fn, args, answer))
        try:
            return answer.get(timeout=timeout)
        except queue.Empty:
            return False, None

    def stop(self) -> None:
        """End the thread after its current call (a hung call is simply left behind: it is a daemon)."""
        self._jobs.put(None)
        self.alive = False


@register("env", "web")
class WebEnv(TextEnv):
    def __init__(self, context: Context | None = None, *, start_url: str = START_URL, width: int = 1280,
                 height: int = 800, sandbox: bool = True, step_timeout: float = STEP_TIMEOUT,
                 render_mode: str | None = None):
        self.start_url, self.viewport, self.sandbox = start_url, {"width": width, "height": height}, sandbox
        self.step_timeout = step_timeout
        self._home: Path | None = None
        self._reaper: Reaper | None = None
        self._sandbox: Sandbox | None = None
        self._pw: Any = None
        self._browser: Any = None
        self._version: str | None = None
        self._context: Any = None
        self._worker: BrowserThread | None = None
        self._drivers: set[int] = set()
        self.page: Any = None
        self._url = start_url
        self.messages: list[str] = []
        super().__init__("web", context, render_mode)

    def provenance(self) -> Provenance:
        return Provenance(source="real", environment="web:chromium-playwright", extra={"chromium": self._version})

    # --- every browser call runs on one thread, under a deadline ---------------------------------
    def _call(self, fn: Any, *args: Any, timeout: float | None = None) -> Any:
        """Run ``fn`` on the browser's thread; past ``timeout`` the browser is killed (a page in an endless
        script blocks Playwright's calls for good) and ``BrowserHung`` is raised."""
        timeout = timeout or self.step_timeout
        if self._worker is None or not self._worker.alive:
            self._worker = BrowserThread()
        done, result = self._worker.run(fn, args, timeout)
        if not done:
            self._kill_browser()
            self._kill_drivers()  # the hung call then returns with an error, and its thread ends
            self._worker.stop()
            self._worker = None
            self._pw = self._browser = self._context = self.page = None
            raise BrowserHung(f"the browser did not answer within {timeout:g} s")
        if isinstance(result, BaseException):
            raise result
        return result

    def _kill_browser(self) -> None:
        """SIGKILL the bubblewrap processes that hold this browser (everything inside dies with them)."""
        if self._home is None:
            return
        bwrap, home = bwrap_path().encode(), str(self._home).encode()
        for entry in Path("/proc").iterdir():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0") if entry.name.isdigit() else []
                if argv and argv[0] == bwrap and home in argv:
                    os.kill(int(entry.name), signal.SIGKILL)
            except OSError:
                pass

    def _kill_drivers(self) -> None:
        """SIGKILL the Playwright driver (node) this env started: the hung call's thread holds it, so it would
        otherwise live as long as this process."""
        for pid in self._drivers:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self._drivers = set()

    # --- lifecycle -----------------------------------------------------------------------------
    def _launch(self) -> None:
        from playwright.sync_api import sync_playwright

        if self._browser is None:
            if not Path(CHROMIUM).exists():
                raise RuntimeError(f"{CHROMIUM} not found: run `lwm setup web` (as root it installs chromium)")
            before = _driver_pids()
            self._pw = sync_playwright().start()
            self._drivers = _driver_pids() - before
            executable = self._sandboxed_chromium() if self.sandbox else CHROMIUM
            self._browser = self._pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
            self._version = self._browser.version
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
        self._home, self._reaper = new_work_folder("lwm-web-", BROWSER_LIMITS.disk_mb)
        self._sandbox = Sandbox(self._home, limits=BROWSER_LIMITS)
        argv = self._sandbox.argv(CHROMIUM)
        launcher = self._home / "chromium"
        launcher.write_text(f'#!/bin/sh\nexec {shlex.join(argv)} "$@"\n')
        launcher.chmod(0o755)
        return str(launcher)

    def _serve(self, route: Any) -> None:
        """Answer from local files for the known sites; anything else fails as offline."""
        url = route.request.url.split("#", 1)[0].split("?", 1)[0]
        for prefix, site in SITES.items():
            if url.startswith(prefix):
                root = located(site)
                relative = url[len(prefix):] or "index.html"
                path = (root / relative).resolve()
                if relative.endswith("/"):
                    path = path / "index.html"
                packed = path.with_name(path.name + ".gz")  # Debian compresses a doc set's largest pages
                if root.resolve() in path.parents and (path.is_file() or packed.is_file()):
                    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
                    body = path.read_bytes() if path.is_file() else gzip.decompress(packed.read_bytes())
                    route.fulfill(status=200, body=body, content_type=kind)
                else:
                    route.fulfill(status=404, body=f"<title>404 Not Found</title><h1>Not Found</h1><p>{url}</p>",
                                  content_type="text/html")
                return
        route.abort("internetdisconnected")

    def close(self) -> None:
        if self._worker is not None:
            try:
                self._call(self._close_browser, timeout=30.0)
            except BrowserHung:
                pass
        if self._worker is not None:
            self._worker.stop()
            self._worker = None
        self._drop_home()

    def _close_browser(self) -> None:
        for closer in (self._context, self._browser):
            try:
                if closer is not None:
                    closer.close()
            except Exception:  # the browser may already be gone
                pass
        if self._pw is not None:
            self._pw.stop()
        self._pw = self._browser = self._context = self.page = None
        self._drivers = set()

    def _drop_home(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
        if self._reaper is not None:
            self._reaper.close()
        self._home = self._reaper = self._sandbox = None

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
        try:
            text = self._call(self._open, options.get("url", self.start_url))
        except BrowserHung:  # the start page itself hangs: nothing to fall back to
            self._drop_home()
            raise
        self.messages = []
        self.trajectory = self._new_trajectory()  # now with the browser's version
        return text

    def _open(self, url: str) -> str:
        """A fresh context (and browser, if none) showing ``url``."""
        self._launch()
        self.page.goto(url)
        self._url = self.page.url
        return self.snapshot()

    # --- actions ---------------------------------------------------------------------------------
    def transition(self, action: Action) -> Observation:
        last_url = self._url
        try:
            text, url, error = self._call(self._act, action.content)
        except BrowserHung as exc:
            # What a user of a hung tab does: give up on it. The browser restarts at the last page, or at the
            # start page when the last page does not open again (an error page, a file:// address).
            self._drop_home()
            try:
                text = self._call(self._open, last_url)
            except BrowserHung:
                raise
            except Exception:  # the new browser stands: only its page goes to the start
                last_url = self.start_url
                text = self._call(self._open, last_url)
            text = f"Error: the page stopped responding ({exc}); the browser was restarted at {last_url}\n\n{text}"
            return Observation(content=text, metadata={"url": last_url, "action_error": True, "browser_hung": True})
        if error:
            text = f"Error: {error}\n\n{text}"
        return Observation(content=text, metadata={"url": url, "action_error": error is not None})

    def _act(self, code: str) -> tuple[str, str, str | None]:
        error = None
        for name, args, kwargs in parse_calls(code):
            try:
                self._do(name, args, kwargs)
            except Exception as exc:  # the action failed in the browser: say so, show the page
                error = re.sub(r"\s+", " ", str(exc).split("Call log:")[0]).strip()[:300]
                break
            try:
                self.page.wait_for_load_state("domcontentloaded", timeout=ACTION_TIMEOUT_MS)
            except Exception:
                pass
        self._url = self.page.url
        return self.snapshot(), self._url, error

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
