"""The sandbox's seccomp filter: what an unprivileged process could still ask of the kernel, refused.

Dropping every capability already stops ``mount``, ``chroot`` and raw sockets. What an unprivileged
process can still do on most kernels is create a user namespace (and with it, capabilities inside it:
the door most container-escape exploits use), inject keystrokes into a terminal (TIOCSTI), and reach
kernel interfaces a tool never needs (keyrings, eBPF, userfaultfd, perf events). The filter refuses
those with EPERM; ``clone3`` answers ENOSYS, as in Docker's and Flatpak's filters, because its flags
sit in a struct a filter cannot read, and libc then falls back to ``clone``, whose flags it can.

Built with libseccomp (through ``pyseccomp``) and handed to bubblewrap (``--seccomp FD``) as a compiled
BPF program; where libseccomp is missing, ``program()`` says why and the sandbox runs without it.
"""

from __future__ import annotations

import errno
import tempfile
from functools import cache
from pathlib import Path

CLONE_NEWUSER = 0x10000000
TIOCSTI = 0x5412
REFUSED = ("keyctl", "add_key", "request_key", "bpf", "userfaultfd", "perf_event_open")


class SeccompUnavailable(RuntimeError):
    """libseccomp (or its Python binding) is not installed."""


@cache
def program() -> bytes:
    """The filter as a BPF program for ``bwrap --seccomp``."""
    try:
        import pyseccomp as sc

        rules = sc.SyscallFilter(defaction=sc.ALLOW)
    except (ImportError, OSError, RuntimeError) as exc:
        raise SeccompUnavailable(f"no seccomp filter: libseccomp is not usable ({exc}); "
                                 "apt-get install libseccomp2 and pip install pyseccomp") from exc
    eperm = sc.ERRNO(errno.EPERM)
    rules.add_rule(eperm, "unshare", sc.Arg(0, sc.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER))
    rules.add_rule(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER))
    rules.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    rules.add_rule(eperm, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, TIOCSTI))
    for name in REFUSED:
        rules.add_rule(eperm, name)
    with tempfile.TemporaryFile() as out:
        rules.export_bpf(out)
        out.seek(0)
        return out.read()


def write_program(folder: Path) -> Path | None:
    """The program saved in ``folder`` (bubblewrap reads it from a file descriptor), or None without
    libseccomp."""
    try:
        data = program()
    except SeccompUnavailable:
        return None
    path = folder / "seccomp.bpf"
    if not path.exists():
        path.write_bytes(data)
        path.chmod(0o644)
    return path
