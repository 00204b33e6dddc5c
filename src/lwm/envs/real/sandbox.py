"""Bubblewrap sandboxes for real environments: no network, no privileges, only their own folder writable.

What a sandboxed command gets (docs/collection.md, "Threat model", says how each point is tested):

- the host filesystem read-only, with secrets hidden: ``/root``, ``/home``, the invoking user's home and
  ``/run`` are empty, ``/etc/shadow`` & co. are blanks; a private ``/tmp`` of bounded size; fresh
  ``/dev`` and ``/proc``; its work folder as the one writable place (also ``HOME``);
- its own network (nothing reachable, not even the host's loopback), pid, IPC, UTS and cgroup namespaces,
  and a new terminal session (no keystroke injection into the caller's terminal);
- no privileges: when lwm runs as root the command drops, inside the sandbox, to a uid of its own
  (fresh per sandbox, so episodes cannot signal each other and process limits count per episode) with
  every capability gone from the permitted, effective and bounding sets and ``no_new_privs`` set, so
  ``mount``, ``unshare``, ``chroot`` and raw sockets fail; as an ordinary user bubblewrap's user
  namespace already leaves it unprivileged;
- an empty environment: bubblewrap itself starts from ``env -i``, so even the sandbox's pid 1 holds
  none of the caller's variables;
- resource limits (:class:`Limits`: address space, processes, CPU time, file size, open files), set with
  ``prlimit`` inside the sandbox, and for the whole episode (memory and processes in a cgroup, the work folder's
  size as a filesystem of its own: ``enclosure.py``); ``--die-with-parent`` ends everything when the caller dies.
"""

from __future__ import annotations

import os
import resource
import secrets
import shutil
import sys
import tempfile
import threading
import warnings
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from lwm.envs.real import seccomp
from lwm.envs.real.enclosure import EpisodeCgroup
from lwm.envs.real.process import Reaper, processes_of

HIDDEN_DIRS = ("/root", "/home", "/run", "/etc/ssh", "/etc/sudoers.d", "/var/lib/sudo", "/var/mail",
               "/sys/class/net")
"""Emptied inside (a tmpfs over each): homes hold keys and tokens, /run holds sockets (D-Bus, docker), and
/sys/class/net names the host's network interfaces (the sandbox has none but loopback)."""
HIDDEN_FILES = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers")
"""Replaced by an empty file inside."""
TMP_SIZE = 256 << 20
"""The private /tmp is memory: bounded, so filling it cannot fill the host's RAM."""
UID_RANGE = (3_000_000, 4_000_000)
"""Host uids a root-run sandbox drops to: far from real users, one drawn per sandbox."""
INSIDE_PATH = "/usr/local/bin:/usr/bin:/bin"
SECCOMP_FD = 9


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing; the message says how to install it."""


def bwrap_path() -> str:
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed: apt-get install bubblewrap "
                                 "(`lwm setup` does this as root)")
    return path


@dataclass(frozen=True)
class Limits:
    """Resource limits. ``None`` leaves one unlimited (e.g. a browser's address space).

    Address space, CPU time, file size and open files are per process (RLIMIT_AS/CPU/FSIZE/NOFILE);
    processes count every process of the sandbox's uid, which when lwm runs as root is the episode's own, and
    (as root) the episode's cgroup holds them too. ``episode_memory_mb`` (resident memory of all the episode's
    processes together) and ``disk_mb`` (its work folder) are per episode, as root (``enclosure.py``).
    """

    memory_mb: int | None = 2048
    processes: int | None = 256
    cpu_seconds: int | None = 600
    file_size_mb: int | None = 1024
    open_files: int | None = 1024
    episode_memory_mb: int | None = 2048
    disk_mb: int | None = 1024

    @classmethod
    def of(cls, value: Limits | dict[str, Any] | None) -> Limits:
        """Limits from an environment option (``--env-option 'limits={"disk_mb": 2048}'``: changes to the
        defaults); an unknown name is a ValueError naming the known ones."""
        if value is None:
            return DEFAULT_LIMITS
        if isinstance(value, Limits):
            return value
        if not isinstance(value, dict):
            raise ValueError(f"limits must be an object of limits, not {type(value).__name__}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise ValueError(f"unknown limit {', '.join(unknown)}; limits are {', '.join(known)}")
        return replace(DEFAULT_LIMITS, **value)

    def prlimit_argv(self, uid_processes: int = 0) -> list[str]:
        """``prlimit`` options for these limits, each capped at the caller's own hard limit."""
        wanted = [("as", resource.RLIMIT_AS, self.memory_mb and self.memory_mb << 20),
                  ("nproc", resource.RLIMIT_NPROC, self.processes and self.processes + uid_processes),
                  ("cpu", resource.RLIMIT_CPU, self.cpu_seconds),
                  ("fsize", resource.RLIMIT_FSIZE, self.file_size_mb and self.file_size_mb << 20),
                  ("nofile", resource.RLIMIT_NOFILE, self.open_files)]
        options = []
        for name, kind, value in wanted:
            if value:
                hard = resource.getrlimit(kind)[1]
                value = value if hard == resource.RLIM_INFINITY else min(value, hard)
                options.append(f"--{name}={value}")
        return ["prlimit", *options, "--"] if options else []


DEFAULT_LIMITS = Limits()


def _lwm_install() -> list[Path]:
    """lwm's own install: its interpreter, virtual environment, checkout, and data folder (``lwm setup``'s
    servers)."""
    from lwm.provision import data_dir

    roots = {Path(sys.prefix), Path(sys.base_prefix), Path(__file__).resolve().parents[4], data_dir()}
    return sorted({p.resolve() for p in roots if p.exists()})


def chown_tree(path: Path, uid: int) -> None:
    """Give ``path`` (and everything under it) to ``uid``, without following symlinks."""
    os.chown(path, uid, uid, follow_symlinks=False)
    if path.is_dir() and not path.is_symlink():
        for root, dirs, files in os.walk(path):
            for name in dirs + files:
                os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)


@dataclass
class Sandbox:
    workdir: Path
    hostname: str = "sandbox"
    env: dict[str, str] = field(default_factory=dict)
    mount_at: str | None = None
    """Where the work folder appears inside (e.g. ``/home/user``), so paths do not show the temp dir."""
    binds: dict[str, str] = field(default_factory=dict)
    """Extra host folders made writable inside, host path -> path inside."""
    limits: Limits = DEFAULT_LIMITS
    interactive: bool = False
    """Keep the caller's terminal (a tmux pane's shell); otherwise the command gets a new session."""
    seccomp: bool = True
    """Load the seccomp filter (``seccomp.py``) where libseccomp is available."""
    uid: int | None = None
    """The host uid the command runs as; drawn fresh when lwm runs as root, else the caller's own."""

    def __post_init__(self) -> None:
        self.workdir = Path(self.workdir)
        self._identity: list[Path] = []
        if self.drops_privileges:
            if self.uid is None:
                self.uid = UID_RANGE[0] + secrets.randbelow(UID_RANGE[1] - UID_RANGE[0])
            self.own(self.workdir)
            for host in self.binds:
                self.own(Path(host))
            self._identity = _identity_files(self.uid)
        self._uid_processes = 0 if self.drops_privileges else len(processes_of(os.geteuid()))
        self._cgroup = EpisodeCgroup.create(self.limits.episode_memory_mb, self.limits.processes)

    def close(self) -> None:
        """Remove the sandbox's own files (its passwd/group entries) and cgroup (ending what is left in it)."""
        for path in self._identity:
            path.unlink(missing_ok=True)
        self._identity = []
        if self._cgroup is not None:
            self._cgroup.close()
            self._cgroup = None

    def memory_kills(self) -> int:
        """Processes the episode's memory limit ended so far (0 without a cgroup)."""
        return self._cgroup.memory_kills() if self._cgroup is not None else 0

    @property
    def drops_privileges(self) -> bool:
        return os.geteuid() == 0

    def own(self, path: Path) -> None:
        """Make a host-side file or folder (made by lwm, e.g. a tool's write) the sandbox's own."""
        if self.drops_privileges:
            chown_tree(Path(path), self.uid)

    def argv(self, *command: str) -> list[str]:
        """The command line that runs ``command`` inside the sandbox, in the work folder."""
        source = str(self.workdir.resolve())
        work = self.mount_at or source
        tmpfs = [d for d in HIDDEN_DIRS if os.path.isdir(d) and not os.path.islink(d)]
        home = str(Path.home().resolve())
        if home not in ("/", *tmpfs) and not any(Path(d) in Path(home).parents for d in tmpfs):
            tmpfs.append(home)
        args = [bwrap_path(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                "--perms", "1777", "--size", str(TMP_SIZE), "--tmpfs", "/tmp"]
        for folder in tmpfs:
            args += ["--size", str(TMP_SIZE), "--tmpfs", folder]
        for name in HIDDEN_FILES:
            if os.path.isfile(name):
                args += ["--ro-bind", "/dev/null", name]
        for path in self._identity:  # /etc/passwd and /etc/group that name the dropped uid "user"
            args += ["--ro-bind", str(path), f"/etc/{path.suffix[1:]}"]
        covered = ["/tmp", *tmpfs]
        for path in _lwm_install():  # lwm's interpreter, venv, checkout and data, wherever they live, read-only
            if any(Path(c) in path.parents for c in covered):
                args += [*_parents(path, covered), "--ro-bind", str(path), str(path)]
        for host, inside in [(source, work), *self.binds.items()]:
            args += [*_parents(Path(inside), covered), "--bind", str(Path(host).resolve()), inside]
        args += ["--chdir", work, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                 "--unshare-cgroup-try", "--hostname", self.hostname, "--die-with-parent",
                 *([] if self.interactive else ["--new-session"]),
                 "--clearenv", "--setenv", "HOME", self.mount_at or work, "--setenv", "PATH", INSIDE_PATH,
                 "--setenv", "LANG", "C.UTF-8", "--setenv", "TERM", "xterm-256color"]
        for key, value in self.env.items():
            args += ["--setenv", key, value]
        inner = [*self.limits.prlimit_argv(self._uid_processes), *self._drop_argv(), *command]
        joined = self._cgroup.join_argv() if self._cgroup is not None else []
        program = _seccomp_program() if self.seccomp else None
        if program is None:
            return [*joined, "env", "-i", f"PATH={INSIDE_PATH}", *args, "--", *inner]
        # bubblewrap reads the filter from a file descriptor: a shell opens it, then becomes bubblewrap.
        return [*joined, "sh", "-c", f'exec "$@" {SECCOMP_FD}<"$0"', str(program), "env", "-i",
                f"PATH={INSIDE_PATH}", *args, "--seccomp", str(SECCOMP_FD), "--", *inner]

    def _drop_argv(self) -> list[str]:
        if not self.drops_privileges:
            return ["setpriv", "--no-new-privs", "--"]
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--no-new-privs", "--"]


_shared: tuple[Path, Reaper] | None = None
_shared_lock = threading.Lock()


def _shared_dir() -> Path:
    """One folder per lwm process for the sandboxes' own files (passwd/group entries, the seccomp
    program), removed by a reaper when the process ends, however it ends. Made under a lock: two sessions
    starting at once made two folders, and the one whose reaper was dropped stayed behind."""
    global _shared
    with _shared_lock:
        if _shared is None or not _shared[0].exists():
            folder = Path(tempfile.mkdtemp(prefix="lwm-sandbox-"))
            folder.chmod(0o755)
            _shared = (folder, Reaper([folder]))
        return _shared[0]


def _identity_files(uid: int) -> list[Path]:
    """The host's passwd and group plus a ``user`` entry for ``uid`` (programs such as dbus-daemon and
    ``whoami`` need a name)."""
    files = []
    for name, line in (("passwd", f"user:x:{uid}:{uid}:user:/home/user:/bin/bash"), ("group", f"user:x:{uid}:")):
        host = Path("/etc", name).read_text() if Path("/etc", name).exists() else ""
        path = _shared_dir() / f"{uid}.{name}"
        path.write_text(host.rstrip("\n") + "\n" + line + "\n")
        path.chmod(0o644)
        files.append(path)
    return files


def _seccomp_program() -> Path | None:
    """The filter's file (written once per shared folder; the compiled program itself is cached)."""
    path = seccomp.write_program(_shared_dir())
    if path is None:
        warnings.warn("lwm sandboxes run without a seccomp filter: libseccomp/pyseccomp is not usable",
                      stacklevel=3)
    return path


def _parents(path: Path, covered: list[str]) -> list[str]:
    """``--dir`` entries (mode 0755) for the folders between a tmpfs mount and ``path``: bubblewrap would
    make them 0700 root, which a dropped uid cannot cross."""
    for top in covered:
        if Path(top) in path.parents:
            between = [p for p in reversed(path.parents) if Path(top) in p.parents]
            return [a for p in between for a in ("--perms", "0755", "--dir", str(p))]
    return []
