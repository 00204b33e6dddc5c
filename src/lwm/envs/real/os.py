"""The real OS environment: a Linux desktop on Xvfb with GTK apps, read through AT-SPI.

Each episode starts its own X server (Xvfb), D-Bus session and AT-SPI bus, then the applications
(Debian's mousepad and galculator by default) with the accessibility bridge on. Actions are Python
code (pyautogui, subprocess, file APIs) run in a bubblewrap sandbox that can reach only the X and
D-Bus sockets and its own folder (``/home/user``); the observation is what the code printed followed
by the desktop's accessibility tree (role, name, text, bounds, states), read with Debian's pyatspi.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lwm.envs.base import TextEnv
from lwm.envs.real.sandbox import Sandbox
from lwm.registry import register
from lwm.types import Action, Context, Observation, Provenance

SYSTEM_PYTHON = "/usr/bin/python3"
TREE_SCRIPT = Path(__file__).with_name("os_tree.py")
AT_SPI_LAUNCHER = "/usr/libexec/at-spi-bus-launcher"
HOME = "/home/user"
DEFAULT_APPS = ("mousepad",)


class DesktopUnavailable(RuntimeError):
    """Xvfb, AT-SPI or pyatspi is missing; the message says what to install."""


def check_desktop() -> None:
    missing = [p for p in ("/usr/bin/Xvfb", "/usr/bin/dbus-daemon", AT_SPI_LAUNCHER) if not Path(p).exists()]
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import pyatspi"], capture_output=True) \
        if Path(SYSTEM_PYTHON).exists() else None
    if missing or probe is None or probe.returncode:
        raise DesktopUnavailable("the OS environment needs xvfb, dbus, at-spi2-core and python3-pyatspi "
                                 f"(make setup installs them); missing: {missing or ['pyatspi']}")


@register("env", "os")
class OSEnv(TextEnv):
    def __init__(self, context: Context | None = None, *, apps: tuple[str, ...] | list[str] = DEFAULT_APPS,
                 width: int = 1280, height: int = 800, settle: float = 0.6, action_timeout: float = 20.0,
                 render_mode: str | None = None):
        self.apps, self.size = tuple(apps), (width, height)
        self.settle, self.action_timeout = settle, action_timeout
        self.procs: list[subprocess.Popen] = []
        self.workdir: Path | None = None
        self.runtime: Path | None = None
        self.env: dict[str, str] = {}
        super().__init__("os", context, render_mode)

    def provenance(self) -> Provenance:
        return Provenance(source="real", environment="os:xvfb-atspi", extra={"apps": list(self.apps)})

    # --- the desktop -------------------------------------------------------------------------------
    def _spawn(self, argv: list[str], **kwargs: Any) -> subprocess.Popen:
        proc = subprocess.Popen(argv, env=self.env, stdout=kwargs.pop("stdout", subprocess.DEVNULL),
                                stderr=subprocess.DEVNULL, start_new_session=True, **kwargs)
        self.procs.append(proc)
        return proc

    def _start(self) -> None:
        check_desktop()
        self.close()
        self.workdir = Path(tempfile.mkdtemp(prefix="lwm-os-home-"))
        self.runtime = Path(tempfile.mkdtemp(prefix="lwm-os-run-"))
        (self.runtime / "Xauthority").touch()
        read, write = os.pipe()
        self.env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(self.workdir), "LANG": "C.UTF-8",
                    "XDG_RUNTIME_DIR": str(self.runtime), "XAUTHORITY": str(self.runtime / "Xauthority")}
        xvfb = self._spawn(["Xvfb", "-displayfd", str(write), "-screen", "0", f"{self.size[0]}x{self.size[1]}x24",
                            "-nolisten", "tcp"], pass_fds=(write,))
        os.close(write)
        with os.fdopen(read) as pipe:
            display = pipe.readline().strip()
        if not display:
            raise DesktopUnavailable(f"Xvfb did not start (exit code {xvfb.poll()})")
        self.env["DISPLAY"] = f":{display}"
        bus = self._spawn(["dbus-daemon", "--session", "--nofork", "--print-address=1",
                           f"--address=unix:path={self.runtime}/bus"], stdout=subprocess.PIPE)
        assert bus.stdout is not None
        self.env["DBUS_SESSION_BUS_ADDRESS"] = bus.stdout.readline().decode().strip()
        self.env.update(GTK_MODULES="gail:atk-bridge", NO_AT_BRIDGE="0", GNOME_ACCESSIBILITY="1")
        self._spawn([AT_SPI_LAUNCHER, "--launch-immediately"])
        time.sleep(0.3)
        for app in self.apps:
            self._spawn([app], cwd=str(self.workdir))
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            tree = self.tree()
            if all(f"application '{app}'" in tree for app in self.apps):
                return
            time.sleep(0.2)
        raise DesktopUnavailable(f"applications {list(self.apps)} did not appear in the accessibility tree")

    def close(self) -> None:
        for proc in reversed(self.procs):
            try:
                os.killpg(proc.pid, 9)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        self.procs = []
        for folder in (self.workdir, self.runtime):
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
        self.workdir = self.runtime = None

    def tree(self) -> str:
        done = subprocess.run([SYSTEM_PYTHON, str(TREE_SCRIPT)], env=self.env, capture_output=True, text=True,
                              timeout=30)
        return done.stdout.rstrip() or f"(no accessibility tree: {done.stderr.strip()[-300:]})"

    # --- the contract ----------------------------------------------------------------------------
    def initial_observation(self, seed: int | None, options: dict[str, Any]) -> str:
        self._start()
        return self.tree()

    def transition(self, action: Action) -> Observation:
        assert self.workdir is not None and self.runtime is not None, "reset() first"
        env = {**self.env, "HOME": HOME, "XAUTHORITY": str(self.runtime / "Xauthority"),
               "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"}
        sandbox = Sandbox(self.workdir, env=env, mount_at=HOME, binds=("/tmp/.X11-unix", str(self.runtime)))
        try:
            done = subprocess.run(sandbox.argv(sys.executable, "-c", action.content), capture_output=True,
                                  text=True, timeout=self.action_timeout, errors="replace")
            output = (done.stdout + done.stderr).replace("Xlib.xauth: warning, no xauthority details available\n", "")
        except subprocess.TimeoutExpired:
            output = f"[action timed out after {self.action_timeout:g} s]\n"
        time.sleep(self.settle)
        text = self.tree()
        return Observation(content=f"Output:\n{output.rstrip()}\n\n{text}" if output.strip() else text)
