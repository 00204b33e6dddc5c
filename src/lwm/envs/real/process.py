"""Processes of real environments: bounded output, hard deadlines, and nothing left behind.

``run_capped`` runs a command with a deadline that holds and keeps only the head and tail of what it
prints (a command that prints 30 MB, or forever, costs a few hundred KB). ``Reaper`` is a watchdog
started beside an episode: when lwm dies, even by SIGKILL, it kills what the episode started and removes
its files, so a killed collection leaves no processes, sockets or folders behind.
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import shutil
import signal
import subprocess
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from lwm.envs.base import MAX_OBSERVATION, cap_text

STOPPING = threading.Event()
"""Set when the serving process is told to stop (SIGTERM): every step in flight ends at once, whatever it
waits for, so a shutdown never waits out a long ``duration`` or a command's timeout."""
_waits: weakref.WeakSet[threading.Event] = weakref.WeakSet()


def interruptible(event: threading.Event) -> threading.Event:
    """Register an episode's own "stop waiting" event: :func:`stop_in_flight` sets it too."""
    _waits.add(event)
    if STOPPING.is_set():
        event.set()
    return event


def stop_in_flight() -> None:
    """End every step in flight now (called by the server's SIGTERM handler, before it drains connections)."""
    STOPPING.set()
    for event in list(_waits):
        event.set()


@dataclass
class Finished:
    output: str
    returncode: int | None
    """``None`` when the deadline killed it."""


def run_capped(argv: list[str], timeout: float, limit: int = MAX_OBSERVATION) -> Finished:
    """Run ``argv`` (stdout and stderr together), killing its process group at ``timeout`` seconds."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    assert proc.stdout is not None
    fd, head, tail, total = proc.stdout.fileno(), bytearray(), deque(), 0
    tail_bytes, half = 0, (limit - 200) // 2  # room for the note between head and tail
    deadline = time.monotonic() + timeout
    timed_out = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or STOPPING.is_set():
            timed_out = True
            break
        ready, _, _ = select.select([fd], [], [], min(left, 0.2))
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        total += len(chunk)
        room = half - len(head)
        if room > 0:
            head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            tail.append(chunk)
            tail_bytes += len(chunk)
            while tail and tail_bytes - len(tail[0]) >= half:
                tail_bytes -= len(tail.popleft())
    if timed_out:
        kill_group(proc)
    proc.stdout.close()
    code = None if timed_out else proc.wait()
    rest = b"".join(tail)[-half:] if tail else b""
    text = head.decode(errors="replace")
    if total > len(head) + len(rest):
        text += f"\n[... {total - len(head) - len(rest):,} bytes of output omitted ...]\n"
    text += rest.decode(errors="replace")
    return Finished(cap_text(text, limit), code)


def processes_of(uid: int) -> list[str]:
    """Names of the live processes owned by ``uid``."""
    names = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                names.append((entry / "comm").read_text().strip())
        except OSError:  # gone meanwhile
            pass
    return names


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL a process started with ``start_new_session`` and its group, then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


class Reaper:
    """A watchdog for one episode: when this process dies it runs ``commands`` and removes ``paths``.

    It is a tiny shell loop in its own session (so a signal to lwm's group does not take it first), and a
    grandchild of lwm's, not a child: a supervisor that kills a dying process's children (a Ray worker exiting
    because its node died kills its child processes) cannot take it before it cleans up (its parent, a shell
    that waits for it, is what such a supervisor kills). ``close()`` does the same cleanup now and stops it."""

    def __init__(self, paths: list[Path | str] = (), commands: list[str] = ()):
        self.paths = [str(p) for p in paths]
        self.commands = list(commands)
        cleanup = "; ".join([*(f"{c} >/dev/null 2>&1" for c in self.commands),
                             *(f"rm -rf -- {shlex.quote(p)}" for p in self.paths)]) or "true"
        watch = f"while kill -0 {os.getpid()} 2>/dev/null; do sleep 0.5; done; {cleanup}"
        self.proc = subprocess.Popen(["sh", "-c", f"sh -c {shlex.quote(watch)} </dev/null >/dev/null 2>&1 & "
                                      "echo $!; wait"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, start_new_session=True, env={"PATH": "/usr/bin:/bin"})
        assert self.proc.stdout is not None
        self.watchdog = int(self.proc.stdout.readline())
        self.proc.stdout.close()

    def close(self) -> None:
        """Clean up now: run its commands, remove its paths, then end the watchdog. In that order: a process
        killed while closing an episode (a collection is killed just as an episode ends) leaves the watchdog to
        finish the cleanup; ended first, it once left the episode's folder and disk image behind."""
        for command in self.commands:
            subprocess.run(["sh", "-c", command], capture_output=True)
        for path in self.paths:
            target = Path(path)
            # a process the commands ended may still be writing its last files (a shell its history on
            # SIGHUP), so a removal that raced it is tried again for a moment
            for _ in range(20):
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target, ignore_errors=True)
                else:
                    target.unlink(missing_ok=True)
                if not target.exists() and not target.is_symlink():
                    break
                time.sleep(0.1)
        self.stop()

    def stop(self) -> None:
        """End the watchdog without cleaning up (what it guarded is over, or closed already)."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.watchdog, signal.SIGKILL)
            try:
                self.proc.wait(5)  # the waiting shell ends with its watchdog
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
