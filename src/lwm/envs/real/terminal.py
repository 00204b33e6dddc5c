"""The real terminal: bash inside tmux, inside a bubblewrap sandbox.

Actions are keystroke lists (``{"keystrokes", "duration"}``): text is typed literally, ``\\n`` is
Enter, and a whole step that is a tmux key name (``C-c``, ``Tab``, ``Up``…) is sent as that key. After
each step the environment waits ``duration`` seconds; the observation is the visible screen of a
fixed-size pane. Each environment has its own tmux server (private socket) and work folder.
"""

from __future__ import annotations

import re
import shlex
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from lwm.envs.base import TextEnv
from lwm.envs.real.enclosure import new_work_folder
from lwm.envs.real.process import STOPPING, Reaper, interruptible
from lwm.envs.real.sandbox import DEFAULT_LIMITS, Limits, Sandbox
from lwm.registry import register
from lwm.types import Action, Context, Observation, Provenance

TMUX_KEY = re.compile(r"^(C-|M-|S-)?[A-Za-z0-9\[\]]+$")
NAMED_KEYS = {"Enter", "Tab", "BTab", "Escape", "Up", "Down", "Left", "Right", "Home", "End", "PageUp", "PageDown",
              "PPage", "NPage", "BSpace", "DC", "IC", "Space"}
PS1 = r"user@sandbox:\w$ "
HOME = "/home/user"
MAX_WAIT = 60.0
"""The most seconds one action waits in all (the sum of its steps' ``duration``s, each held to what is left): a
``duration`` of 1e9 must not hold a served session's thread, its sandbox and its server's shutdown."""
SEND_CHUNK = 16_384
"""Characters of literal text per tmux send-keys call: one argument over 128 KiB is refused by exec (E2BIG).
Text is sent in such chunks whatever it holds (a newline is sent as the carriage return the Enter key sends),
so 100,000 newlines cost 7 tmux calls, not 100,000."""


def is_key(keystrokes: str) -> bool:
    """Whether a step is a tmux key name (sent as a key) rather than text to type."""
    return keystrokes in NAMED_KEYS or bool(TMUX_KEY.match(keystrokes) and keystrokes[:2] in {"C-", "M-", "S-"})


@register("env", "terminal")
class TerminalEnv(TextEnv):
    def __init__(self, context: Context | None = None, *, workdir: str | Path | None = None, width: int = 100,
                 height: int = 30, start_timeout: float = 10.0, limits: Limits | dict[str, Any] = DEFAULT_LIMITS,
                 render_mode: str | None = None):
        self.width, self.height, self.start_timeout, self.limits = width, height, start_timeout, Limits.of(limits)
        super().__init__("terminal", context, render_mode)
        self._given_workdir = Path(workdir) if workdir else None
        self.workdir: Path | None = None
        self._server: Any = None
        self._pane: Any = None
        self._reaper: Reaper | None = None
        self._sandbox: Sandbox | None = None
        self._closing = interruptible(threading.Event())
        """Set by close() (from any thread) or a server's SIGTERM: a step waiting out its duration returns at once."""

    def provenance(self) -> Provenance:
        return Provenance(source="real", environment="terminal:bash-tmux-bwrap",
                          extra={"tmux": shutil.which("tmux"), "size": f"{self.width}x{self.height}"})

    # --- lifecycle -----------------------------------------------------------------------------
    def _start(self) -> None:
        self.close()
        try:
            self._launch()
        except BaseException:
            self.close()  # never leave a tmux server behind a failed start
            raise

    def _launch(self) -> None:
        import libtmux

        self._closing = interruptible(threading.Event())
        socket = Path(tempfile.gettempdir()) / f"lwm-tmux-{uuid.uuid4().hex[:10]}"
        # The watchdog starts before tmux, so no kill can fall between the two: when this process dies,
        # even by SIGKILL, it takes the tmux server (and with it the sandbox) and the episode's files.
        kill_tmux = f"tmux -S {shlex.quote(str(socket))} kill-server"
        if self._given_workdir:  # the caller's folder, as it is (no disk quota: it may hold files already)
            self.workdir = self._given_workdir
            self.workdir.mkdir(parents=True, exist_ok=True)
            self._reaper = Reaper([socket], [kill_tmux])
        else:
            self.workdir, self._reaper = new_work_folder("lwm-term-", self.limits.disk_mb, [socket], [kill_tmux])
        # HISTFILE: the shell keeps its history in memory (history, arrow keys) but writes no file on exit
        self._sandbox = Sandbox(self.workdir, env={"PS1": PS1, "HISTFILE": "/dev/null"}, mount_at=HOME,
                                limits=self.limits, interactive=True)
        command = shlex.join(self._sandbox.argv("bash", "--noprofile", "--norc", "-i"))
        self._server = libtmux.Server(socket_path=socket)
        session = self._server.new_session(session_name="lwm", window_command=command, x=self.width, y=self.height)
        self._server.cmd("set-option", "-g", "status", "off")
        self._server.cmd("set-option", "-g", "history-limit", "5000")
        self._pane = session.active_window.active_pane
        self._wait_for_prompt()

    def _wait_for_prompt(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.screen().rstrip().endswith("$"):
                return
            time.sleep(0.02)
        raise RuntimeError(f"the sandboxed shell did not show a prompt within {self.start_timeout}s:\n{self.screen()}")

    def close(self) -> None:
        self._closing.set()
        if self._reaper is not None:
            self._reaper.close()  # kills the tmux server; removes the socket, and the work folder unless given
            self._reaper = None
        self._server = self._pane = None
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
        self.workdir = None

    # --- the contract --------------------------------------------------------------------------
    def screen(self) -> str:
        lines = self._pane.capture_pane() or []
        return "\n".join(lines).rstrip("\n")

    def initial_observation(self, seed: int | None, options: dict[str, Any]) -> str:
        self._start()
        for setup in options.get("setup", []):  # commands that prepare the episode, then a clean screen
            self._type(setup + "\n", 0.2)
        if options.get("setup"):
            self._type("clear\n", 0.1)
        return self.screen()

    def _type(self, keystrokes: str, duration: float) -> None:
        if is_key(keystrokes):
            self._pane.send_keys(keystrokes, enter=False)
        else:
            text = keystrokes.replace("\n", "\r")  # what tmux's Enter key sends
            for start in range(0, len(text), SEND_CHUNK):
                if self._closing.is_set():
                    return
                piece = text[start:start + SEND_CHUNK]
                # tmux reads an argument ending in ";" as a command separator, even with -l: escape it
                literal = piece[:-1] + "\\;" if piece.endswith(";") else piece
                # "--" ends tmux's options: a chunk starting with "-" is text, not a flag
                self._pane.cmd("send-keys", "-l", "--", literal)
        self._closing.wait(duration)

    def transition(self, action: Action) -> Observation:
        asked = [float(step.get("duration", 0.1)) for step in action.content]
        left = MAX_WAIT
        for step, duration in zip(action.content, asked, strict=True):
            wait = min(duration, left)
            self._type(step["keystrokes"], wait)
            left -= wait
        if self._closing.is_set():
            raise RuntimeError("the server is stopping: the step was ended" if STOPPING.is_set()
                               else "the terminal was closed during the step")
        # capped only when the durations asked for more than MAX_WAIT (not when they add up to it exactly)
        return Observation(content=self.screen(), metadata={"wait_capped": True} if sum(asked) > MAX_WAIT else {})
