"""Bubblewrap sandboxes for real environments: no network, only their own folder writable.

The whole filesystem is mounted read-only, ``/tmp`` is a private tmpfs, ``/dev`` and ``/proc`` are
fresh, and the work folder is the one writable place (also ``HOME``). The network namespace is
unshared, so nothing inside can reach any address, loopback included of the host.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing; the message says how to install it."""


def bwrap_path() -> str:
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed: apt-get install bubblewrap "
                                 "(make setup does this)")
    return path


def _needed_under_tmp() -> list[str]:
    """lwm's own install (its virtual environment, the checkout with servers/) when it lives under /tmp,
    which the sandbox replaces with an empty tmpfs: kept visible, read-only."""
    tmp = Path("/tmp").resolve()
    roots = {Path(sys.prefix).resolve(), Path(__file__).resolve().parents[4]}
    return sorted(str(p) for p in roots if tmp in p.parents)


@dataclass
class Sandbox:
    workdir: Path
    hostname: str = "sandbox"
    env: dict[str, str] = field(default_factory=dict)
    mount_at: str | None = None
    """Where the work folder appears inside (e.g. ``/home/user``), so paths do not show the temp dir."""
    binds: tuple[str, ...] = ()
    """Extra host paths made writable inside at the same place (e.g. an X11 or D-Bus socket folder)."""

    def argv(self, *command: str) -> list[str]:
        """The bwrap command line that runs ``command`` inside the sandbox, in the work folder."""
        source = str(self.workdir.resolve())
        work = self.mount_at or source
        top = "/" + Path(work).parts[1] if len(Path(work).parts) > 2 else "/"
        # A fixed mount point is created inside a private tmpfs over its top folder (e.g. /home).
        extra = ["--tmpfs", top] if self.mount_at and top not in ("/", "/tmp") else []
        args = [
            bwrap_path(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            *[a for path in _needed_under_tmp() for a in ("--ro-bind", path, path)], *extra,
            "--bind", source, work, "--chdir", work, "--unshare-net", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--hostname", self.hostname, "--die-with-parent",
            "--clearenv", "--setenv", "HOME", work, "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
            "--setenv", "LANG", "C.UTF-8", "--setenv", "TERM", "xterm-256color",
        ]
        for path in self.binds:
            args += ["--bind", path, path]
        for key, value in self.env.items():
            args += ["--setenv", key, value]
        return [*args, "--", *command]
