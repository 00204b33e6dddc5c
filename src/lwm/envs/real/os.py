"""The real OS environment: a Linux desktop on Xvfb with GTK apps, read through AT-SPI.

Each episode is one bubblewrap sandbox holding the whole desktop: its own X server (Xvfb, with an
authorisation cookie), D-Bus session, AT-SPI bus and applications (Debian's mousepad by default), run
by ``os_desktop.py``. Actions are Python code (pyautogui, subprocess, file APIs) run in that sandbox, so
they reach only this episode's display and its folder (``/home/user``), and so do the applications they
drive. The observation is what the code printed followed by the desktop's accessibility tree (role,
name, text, bounds, states), read with Debian's pyatspi.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lwm.envs.base import TextEnv
from lwm.envs.real.enclosure import new_work_folder
from lwm.envs.real.process import Reaper, kill_group
from lwm.envs.real.sandbox import DEFAULT_LIMITS, Limits, Sandbox
from lwm.registry import register
from lwm.types import Action, Context, Observation, Provenance

SYSTEM_PYTHON = "/usr/bin/python3"
TREE_SCRIPT = Path(__file__).with_name("os_tree.py")
DESKTOP_SCRIPT = Path(__file__).with_name("os_desktop.py")
AT_SPI_LAUNCHER = "/usr/libexec/at-spi-bus-launcher"
HOME = "/home/user"
DEFAULT_APPS = ("mousepad",)


class DesktopUnavailable(RuntimeError):
    """Xvfb, AT-SPI or pyatspi is missing; the message says what to install."""


def check_desktop() -> None:
    missing = [p for p in ("/usr/bin/Xvfb", "/usr/bin/dbus-daemon", "/usr/bin/xauth", AT_SPI_LAUNCHER)
               if not Path(p).exists()]
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import pyatspi"], capture_output=True) \
        if Path(SYSTEM_PYTHON).exists() else None
    if missing or probe is None or probe.returncode:
        raise DesktopUnavailable("the OS environment needs xvfb, dbus, at-spi2-core and python3-pyatspi "
                                 f"(`lwm setup os` installs them as root); missing: {missing or ['pyatspi']}")


@register("env", "os")
class OSEnv(TextEnv):
    def __init__(self, context: Context | None = None, *, apps: tuple[str, ...] | list[str] = DEFAULT_APPS,
                 width: int = 1280, height: int = 800, settle: float = 0.6, action_timeout: float = 20.0,
                 limits: Limits | dict[str, Any] = DEFAULT_LIMITS, render_mode: str | None = None):
        self.apps, self.size = tuple(apps), (width, height)
        self.settle, self.action_timeout, self.limits = settle, action_timeout, Limits.of(limits)
        self.desktop: subprocess.Popen | None = None
        self.sandbox: Sandbox | None = None
        self.workdir: Path | None = None
        self._reaper: Reaper | None = None
        self._buffer = b""
        self._requests = 0
        self.stray_lines = 0
        """Lines on the desktop's channel that were no answer to lwm's request (something inside the sandbox
        wrote to it): passed over, counted."""
        super().__init__("os", context, render_mode)

    def provenance(self) -> Provenance:
        return Provenance(source="real", environment="os:xvfb-atspi", extra={"apps": list(self.apps)})

    # --- the desktop, inside the episode's sandbox ---------------------------------------------------
    def _start(self) -> str:
        check_desktop()
        self.close()
        self.workdir, self._reaper = new_work_folder("lwm-os-home-", self.limits.disk_mb)
        runtime = "/tmp/lwm-run"
        env = {"XDG_RUNTIME_DIR": runtime, "XAUTHORITY": f"{runtime}/Xauthority", "DISPLAY": ":0",
               "GTK_MODULES": "gail:atk-bridge", "NO_AT_BRIDGE": "0", "GNOME_ACCESSIBILITY": "1"}
        self.sandbox = Sandbox(self.workdir, env=env, mount_at=HOME, limits=self.limits, hostname="desktop")
        config = {"apps": list(self.apps), "size": list(self.size), "tree_script": str(TREE_SCRIPT),
                  "action_python": sys.executable,
                  "action_path": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"}
        self._buffer, self._requests = b"", 0
        self.desktop = subprocess.Popen(self.sandbox.argv(SYSTEM_PYTHON, "-u", str(DESKTOP_SCRIPT), json.dumps(config)),
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        start_new_session=True)
        answer = self._answer(60.0, 0)
        if "tree" not in answer:
            raise DesktopUnavailable(f"the desktop did not start: {answer.get('error')}")
        return answer["tree"]

    def _request(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.desktop is not None and self.desktop.stdin is not None, "reset() first"
        self._requests += 1
        try:
            self.desktop.stdin.write((json.dumps({**request, "id": self._requests}) + "\n").encode())
            self.desktop.stdin.flush()
        except (BrokenPipeError, ValueError):
            return {"error": f"the desktop has ended (exit code {self.desktop.poll()})"}
        return self._answer(timeout, self._requests)

    def _answer(self, timeout: float, request: int) -> dict[str, Any]:
        """The desktop's answer to request ``request``, or ``{"error"}`` when it ends or does not answer in
        ``timeout`` s. The channel is not trusted: code run inside the sandbox can write to it, so a line
        that is not this request's answer (not JSON, another id) is passed over and counted."""
        assert self.desktop is not None and self.desktop.stdout is not None
        fd, deadline = self.desktop.stdout.fileno(), time.monotonic() + timeout
        while True:
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    kill_group(self.desktop)
                    return {"error": f"the desktop did not answer within {timeout:g} s and was stopped"}
                if select.select([fd], [], [], left)[0]:
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        return {"error": f"the desktop has ended (exit code {self.desktop.wait()})"}
                    self._buffer += chunk
            line, self._buffer = self._buffer.split(b"\n", 1)
            try:
                answer = json.loads(line)
            except ValueError:
                answer = None
            if isinstance(answer, dict) and answer.get("id") == request:
                return answer
            self.stray_lines += 1

    def close(self) -> None:
        if self.desktop is not None:
            if self.desktop.stdin is not None:
                self.desktop.stdin.close()
            kill_group(self.desktop)  # the sandbox's pid 1: everything inside ends with it
            self.desktop.stdout.close()
            self.desktop = None
        if self._reaper is not None:
            self._reaper.close()
            self._reaper = None
        if self.sandbox is not None:
            self.sandbox.close()
        self.workdir = self.sandbox = None

    def tree(self) -> str:
        answer = self._request({"op": "tree"}, 40.0)
        return answer.get("tree") or f"(no accessibility tree: {answer.get('error')})"

    # --- the contract ----------------------------------------------------------------------------
    def initial_observation(self, seed: int | None, options: dict[str, Any]) -> str:
        return self._start()

    def transition(self, action: Action) -> Observation:
        request = {"op": "run", "code": action.content, "timeout": self.action_timeout, "settle": self.settle}
        answer = self._request(request, self.action_timeout + self.settle + 40.0)
        if "error" in answer:
            return Observation(content=f"Error: {answer['error']}", metadata={"desktop_error": True})
        output = answer["output"].replace("Xlib.xauth: warning, no xauthority details available\n", "")
        text = answer["tree"]
        return Observation(content=f"Output:\n{output.rstrip()}\n\n{text}" if output.strip() else text)
