"""Limits per episode, not per process: a cgroup for the sandbox's memory and processes, and a size-limited
filesystem for its work folder.

``Limits`` in ``sandbox.py`` are rlimits, held by each process: four processes of 1.5 GB each, or two files of
1 GiB each, stay inside them. Here the whole episode is held:

- ``EpisodeCgroup``: every process the sandbox starts joins one cgroup (v2, or v1's ``memory`` and ``pids``
  hierarchies) with ``memory`` and ``pids`` limits; past the memory limit the kernel's OOM killer ends the
  largest process (the shell shows ``Killed``), past the process limit ``fork`` fails; the episode goes on.
- ``DiskQuota``: the work folder is an ext4 filesystem in a sparse image file, loop-mounted, so writing past
  its size is ``No space left on device`` inside the episode and nothing more lands on the host's disk.

Both need root (lwm runs real environments as root on a collection machine; the sandbox drops to a uid of its
own). Without root, or where the kernel refuses (no cgroup write access, no loop devices), the per-process
limits still hold and one warning says which per-episode limit is not enforced here.
"""

from __future__ import annotations

import itertools
import os
import secrets
import shlex
import shutil
import subprocess
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from lwm.envs.real.process import Reaper

CGROUP_ROOT = Path("/sys/fs/cgroup")
_serial = itertools.count()
_warned: set[str] = set()


def _warn_once(what: str, why: str) -> None:
    if what not in _warned:
        _warned.add(what)
        warnings.warn(f"lwm sandboxes run without a per-episode {what} limit here ({why}); the per-process "
                      "limits still hold", stacklevel=4)


def _own_v1_path(controller: str) -> str:
    """This process's cgroup in a v1 hierarchy (children are made under it, inside whatever holds lwm)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            return path.lstrip("/")
    return ""


@dataclass
class EpisodeCgroup:
    """One episode's cgroup folders (one for v2; ``memory`` and ``pids`` for v1)."""

    folders: list[Path]

    @classmethod
    def create(cls, memory_mb: int | None, processes: int | None) -> EpisodeCgroup | None:
        """A new cgroup holding ``memory_mb`` and ``processes`` for everything that joins it, or None (with
        one warning) where this machine cannot make one."""
        if not memory_mb and not processes:
            return None
        if os.geteuid() != 0:
            _warn_once("memory and process", "cgroups need root")
            return None
        name = f"lwm-{os.getpid()}-{next(_serial)}"
        made = cls([])
        try:
            if (CGROUP_ROOT / "cgroup.controllers").is_file():  # cgroup v2, one hierarchy
                parent = CGROUP_ROOT / "lwm"
                parent.mkdir(exist_ok=True)
                _sweep(parent)
                for folder in (CGROUP_ROOT, parent):
                    (folder / "cgroup.subtree_control").write_text("+memory +pids")
                made.folders = [parent / name]
                made.folders[0].mkdir()
                if memory_mb:
                    (made.folders[0] / "memory.max").write_text(str(memory_mb << 20))
                    (made.folders[0] / "memory.swap.max").write_text("0")
            else:  # cgroup v1: a folder in each hierarchy, under this process's own
                for controller in ("memory", "pids"):
                    made.folders.append(CGROUP_ROOT / controller / _own_v1_path(controller) / name)
                    _sweep(made.folders[-1].parent)
                    made.folders[-1].mkdir()
                if memory_mb:
                    (made.folders[0] / "memory.limit_in_bytes").write_text(str(memory_mb << 20))
            if processes:
                (made.folders[-1] / "pids.max").write_text(str(processes))
        except OSError as exc:
            made.close()
            _warn_once("memory and process", f"no cgroup could be made: {exc.strerror or exc}")
            return None
        return made

    def join_argv(self) -> list[str]:
        """A prefix that moves the command into this cgroup, then runs it (every child stays in it)."""
        joins = "; ".join(f"echo $$ > {shlex.quote(str(f / 'cgroup.procs'))}" for f in self.folders)
        return ["sh", "-c", f'{joins}; exec "$@"', "sh"]

    def memory_kills(self) -> int:
        """Processes the memory limit ended so far (``oom_kill`` of v2's memory.events, v1's memory.oom_control)."""
        for name in ("memory.events", "memory.oom_control"):
            try:
                counts = dict(line.split() for line in (self.folders[0] / name).read_text().splitlines())
            except (OSError, ValueError):
                continue
            return int(counts.get("oom_kill", 0))
        return 0

    def close(self) -> None:
        """End what is left in it (v2's ``cgroup.kill``, else a SIGKILL each) and remove it."""
        for folder in self.folders:
            _remove(folder)
        self.folders = []


_swept: set[Path] = set()


def _sweep(parent: Path) -> None:
    """Remove the empty cgroups of lwm processes that are gone (killed before they could remove their own), once
    per parent and process: a full test run once left 79 behind."""
    if parent in _swept:
        return
    _swept.add(parent)
    for folder in parent.glob("lwm-*-*"):
        try:
            os.kill(int(folder.name.split("-")[1]), 0)
        except ProcessLookupError:
            try:
                folder.rmdir()  # refused while a process is still in it: then it stays
            except OSError:
                pass
        except (ValueError, PermissionError):
            pass


def _remove(folder: Path) -> None:
    if not folder.is_dir():
        return
    if (folder / "cgroup.kill").exists():
        try:
            (folder / "cgroup.kill").write_text("1")
        except OSError:
            pass
    for _ in range(50):
        try:
            pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
        except OSError:
            pids = []
        for pid in pids:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        try:
            folder.rmdir()
            return
        except OSError:
            time.sleep(0.02)


@dataclass
class DiskQuota:
    """A work folder that is a filesystem of its own (a sparse image, loop-mounted)."""

    folder: Path
    image: Path

    @classmethod
    def mount(cls, folder: Path, size_mb: int | None, image: Path) -> DiskQuota | None:
        """Make the empty folder ``folder`` a ``size_mb`` filesystem kept in ``image``, or None (one warning) where
        that cannot be done here (not root, no loop devices, no mkfs.ext4). The sandbox gives its root to the
        episode's uid."""
        if not size_mb:
            return None
        if os.geteuid() != 0 or shutil.which("mkfs.ext4") is None:
            _warn_once("disk", "a size-limited work folder needs root and mkfs.ext4 (e2fsprogs)")
            return None
        if any(folder.iterdir()):
            raise ValueError(f"{folder} is not empty: a disk quota is made on a new work folder")
        quota = cls(folder, image)
        try:
            with image.open("xb") as handle:
                handle.truncate(size_mb << 20)  # sparse: only what is written takes disk
            for argv in (["mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^has_journal", str(image)],
                         ["mount", "-o", "loop,nosuid,nodev", str(image), str(folder)]):
                subprocess.run(argv, check=True, capture_output=True, timeout=60)
            (folder / "lost+found").rmdir()  # the episode's folder shows what the episode put there
        except (OSError, subprocess.SubprocessError) as exc:
            quota.close()
            detail = getattr(exc, "stderr", b"") or b""
            _warn_once("disk", f"no filesystem could be mounted: {detail.decode(errors='replace').strip() or exc}")
            return None
        return quota

    def close(self) -> None:
        """Unmount (lazily: a process still inside lets go as it ends) and remove the image; the folder stays."""
        release(self.folder, self.image)


def _release_commands(folder: Path, image: Path) -> list[str]:
    return [f"umount -l {shlex.quote(str(folder))} 2>/dev/null", f"rm -f {shlex.quote(str(image))}"]


def release(folder: Path, image: Path) -> None:
    for command in _release_commands(folder, image):
        subprocess.run(["sh", "-c", command], capture_output=True, timeout=60)


def new_work_folder(prefix: str, disk_mb: int | None, paths: list[Path] = (), commands: list[str] = ()) \
        -> tuple[Path, Reaper]:
    """A new, empty work folder for an episode, ``disk_mb`` large where this machine allows, and the episode's
    watchdog (``Reaper``), which runs ``commands``, releases the folder's filesystem and removes ``paths`` and the
    folder when the episode closes or lwm dies. The watchdog starts before the filesystem is made: a collection
    killed while an episode started once left the image and folder behind."""
    folder = Path(tempfile.gettempdir()) / f"{prefix}{secrets.token_hex(4)}"
    image = folder.with_name(f".{folder.name}.img")
    reaper = Reaper([*paths, folder], [*commands, *(_release_commands(folder, image) if disk_mb else [])])
    folder.mkdir(mode=0o700)  # after the watchdog: a process killed in between leaves nothing behind
    DiskQuota.mount(folder, disk_mb, image)
    return folder, reaper
