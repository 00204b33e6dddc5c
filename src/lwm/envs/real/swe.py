"""The real SWE environment: a Python project under git, worked on through tools, in a sandbox.

Tools (their JSON-schema definitions become the session's context): ``bash`` (a shell command in the
bubblewrap sandbox, with its exit code), ``read_file`` (numbered lines, optional range),
``write_file``, ``str_replace`` (exactly one occurrence), ``list_dir`` and ``search`` (grep). File tools
are confined to the repository; every answer is what the tool really returned, errors included.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

from lwm.envs.base import TextEnv
from lwm.envs.real.enclosure import new_work_folder
from lwm.envs.real.process import Reaper, run_capped
from lwm.envs.real.sandbox import DEFAULT_LIMITS, Limits, Sandbox
from lwm.registry import register
from lwm.types import Action, Context, Observation, Provenance, finite_number


def _schema(description: str, required: list[str], **props: tuple[str, str]) -> dict[str, Any]:
    return {
        "description": description,
        "inputSchema": {"type": "object", "required": required,
                        "properties": {k: {"type": t, "description": d} for k, (t, d) in props.items()}},
    }


TOOLS: list[dict[str, Any]] = [
    {"name": "bash", **_schema("Run a shell command in the repository; returns its output and exit code.",
                               ["command"], command=("string", "the command"),
                               timeout=("integer", "seconds before it is stopped (default 60)"))},
    {"name": "read_file", **_schema("Read a text file with line numbers, optionally a range of lines.",
                                    ["path"], path=("string", "path relative to the repository"),
                                    start_line=("integer", "first line (1-based)"),
                                    end_line=("integer", "last line, inclusive"))},
    {"name": "write_file", **_schema("Create or overwrite a file with the given content.", ["path", "content"],
                                     path=("string", "path relative to the repository"),
                                     content=("string", "the whole new content"))},
    {"name": "str_replace", **_schema("Replace the one occurrence of old_str in a file with new_str.",
                                      ["path", "old_str", "new_str"], path=("string", "file path"),
                                      old_str=("string", "text to replace; must occur exactly once"),
                                      new_str=("string", "replacement text"))},
    {"name": "list_dir", **_schema("List a directory (directories end with /).", [],
                                   path=("string", "directory, default the repository root"))},
    {"name": "search", **_schema("Search files for a regular expression (grep -rn).", ["pattern"],
                                 pattern=("string", "regular expression"),
                                 path=("string", "where to search, default the repository root"))},
]


MAX_COMMAND_TIMEOUT = 600.0
DEFAULT_PROJECT = Path(__file__).parent / "projects" / "calc"
"""A tiny bundled project with one failing test; real work should use a real project (--project)."""


MAX_READ_BYTES = 4 * 2**20
"""read_file reads at most this much of a file (a 1 GB log must not take the host's memory); str_replace and
write_file, which run in lwm's own process, outside the sandbox's limits, refuse files larger than this."""
MAX_ARGUMENT_BYTES = 100_000
"""The longest bash command or search pattern: Linux refuses one argument over 128 KiB (E2BIG)."""

MAX_PATH_BYTES = 4096
"""Linux's PATH_MAX: no file tool can name a longer path."""
MAX_PATH_DEPTH = 256


class ToolError(Exception):
    """A tool call the real tool refuses; its message is the observation."""


def unpack_project(source: Path, into: Path) -> Path:
    """Copy a project folder or unpack a source distribution (.tar.gz) into ``into``; returns its root."""
    if source.is_dir():
        target = into / source.name
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.pyc"))
        return target
    with tarfile.open(source) as archive:
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4+ (Debian 12's stock 3.11.2 lacks it)
            archive.extractall(into, filter="data")
        else:
            archive.extractall(into, members=_plain_members(archive, source))
    roots = [p for p in into.iterdir() if p.is_dir()]
    return roots[0] if len(roots) == 1 else into


def _plain_members(archive: tarfile.TarFile, source: Path) -> list[tarfile.TarInfo]:
    """What ``filter="data"`` allows, for a Python without it: files, folders and links that stay inside the
    target; an absolute or ``..`` name, a link leading out, or a device refuses the whole archive."""
    def escapes(name: str) -> bool:
        plain = os.path.normpath(name)
        return os.path.isabs(name) or plain == ".." or plain.startswith("../")

    members = archive.getmembers()
    for member in members:
        link = os.path.join(os.path.dirname(member.name), member.linkname) if member.issym() else member.linkname
        if escapes(member.name) or ((member.issym() or member.islnk()) and escapes(link)) or not (
                member.isfile() or member.isdir() or member.issym() or member.islnk()):
            raise tarfile.TarError(f"{source}: refusing {member.name!r} (outside the project, or not a plain file)")
        member.mode &= 0o755  # as the data filter: no setuid/setgid/sticky bits, nothing group/world-writable
    return members


def _check_argument(tool: str, name: str, value: str) -> None:
    if len(value.encode(errors="surrogateescape")) > MAX_ARGUMENT_BYTES:
        raise ToolError(f"Error: invalid arguments for {tool}: {name} is longer than {MAX_ARGUMENT_BYTES:,} bytes; "
                        "write it to a file with write_file first")


@register("env", "swe")
class SWEEnv(TextEnv):
    def __init__(self, project: str | Path = DEFAULT_PROJECT, context: Context | None = None, *,
                 command_timeout: float = 60.0, limits: Limits | dict[str, Any] = DEFAULT_LIMITS,
                 render_mode: str | None = None):
        from lwm.provision import NotProvisioned, data_dir, sdist_problem

        self.project = Path(project)
        if not self.project.exists():
            hint = ": run `lwm setup swe`" if self.project.is_relative_to(data_dir()) else ""
            raise FileNotFoundError(f"SWE project not found: {self.project}{hint}")
        problem = sdist_problem(self.project)
        if problem is not None:  # a stored sdist changed since it was fetched: not run, refetched by setup
            raise NotProvisioned(f"SWE project {problem}: run `lwm setup swe` to fetch it again")
        self.command_timeout, self.limits = command_timeout, Limits.of(limits)
        self.root: Path | None = None
        self._tmp: Path | None = None
        self._sandbox: Sandbox | None = None
        self._reaper: Reaper | None = None
        super().__init__("swe", (context or Context()).model_copy(update={"tools": TOOLS}), render_mode)

    def provenance(self) -> Provenance:
        name = self.project.name.removesuffix(".tar.gz")  # an sdist is named for its project and version
        return Provenance(source="real", environment=f"swe:{name}", extra={"tools": len(TOOLS)})

    # --- lifecycle -----------------------------------------------------------------------------
    def initial_observation(self, seed: int | None, options: dict[str, Any]) -> str:
        self.close()
        self._tmp, self._reaper = new_work_folder("lwm-swe-", self.limits.disk_mb)
        self.root = unpack_project(self.project, self._tmp)
        git = ["git", "-c", "user.name=lwm", "-c", "user.email=lwm@localhost"]
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "initial import"]):
            subprocess.run([*git, *args], cwd=self.root, check=True, capture_output=True)
        path = f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"
        self._sandbox = Sandbox(self.root, env={"PATH": path}, mount_at=f"/home/user/{self.root.name}",
                                limits=self.limits)
        return self._list_dir(".")

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
        if self._reaper is not None:
            self._reaper.close()  # the episode's folder
        self._tmp = self.root = self._sandbox = self._reaper = None

    def transition(self, action: Action) -> Observation:
        name, args = action.content["name"], action.content["arguments"]
        handler = getattr(self, f"_{name}", None) if name in {t["name"] for t in TOOLS} else None
        try:
            if handler is None:
                raise ToolError(f"Error: unknown tool '{name}'. Available: {', '.join(t['name'] for t in TOOLS)}")
            text, error = handler(**args), False
        except ToolError as exc:
            text, error = str(exc), True
        except (TypeError, ValueError, UnicodeError) as exc:  # a NUL byte in a path or command, a lone surrogate
            text, error = f"Error: invalid arguments for {name}: {exc}", True
        return Observation(content=text, metadata={"tool": name, "tool_error": error})

    # --- tools ---------------------------------------------------------------------------------
    def _path(self, path: str) -> Path:
        assert self.root is not None, "reset() first"
        if not isinstance(path, str):
            raise ToolError(f"Error: path must be a string, not {type(path).__name__}")
        if len(path.encode(errors="replace")) > MAX_PATH_BYTES or path.count("/") > MAX_PATH_DEPTH:
            # resolving is quadratic in the depth: a 400 KB path of "a/" cost 37 s of CPU
            raise ToolError(f"Error: path is longer than the system allows ({MAX_PATH_BYTES:,} bytes, "
                            f"{MAX_PATH_DEPTH} folders deep)")
        full = (self.root / path).resolve()
        if full != self.root.resolve() and self.root.resolve() not in full.parents:
            raise ToolError(f"Error: {path}: outside the repository")
        return full

    def _bash(self, command: str, timeout: int | float | None = None) -> str:
        assert self._sandbox is not None, "reset() first"
        if not isinstance(command, str):
            raise ToolError(f"Error: invalid arguments for bash: command must be a string, "
                            f"not {type(command).__name__}")
        _check_argument("bash", "command", command)
        limit = self._timeout(timeout)
        done = run_capped(self._sandbox.argv("bash", "-c", command), limit)
        output = done.output
        if output and not output.endswith("\n"):
            output += "\n"
        if done.returncode is None:
            return f"{output}[command timed out after {limit:g} s]"
        return f"{output}[exit code: {done.returncode}]"

    def _timeout(self, value: Any) -> float:
        """The bash tool's ``timeout`` in seconds: a bad value is the tool's error observation, not an
        exception out of ``step``; a huge one is held to ``MAX_COMMAND_TIMEOUT``."""
        if value is None:
            return self.command_timeout
        if not finite_number(value) or value <= 0:
            raise ToolError(f"Error: invalid arguments for bash: timeout must be a positive number of seconds, "
                            f"got {repr(value)[:40]}")
        return min(float(value), MAX_COMMAND_TIMEOUT)

    def _read_file(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        full = self._path(path)
        if not full.exists():
            raise ToolError(f"Error: file not found: {path}")
        if full.is_dir():
            raise ToolError(f"Error: {path} is a directory")
        if not full.is_file():  # a FIFO or a device would block the read or never end
            raise ToolError(f"Error: {path} is not a regular file")
        with full.open("rb") as handle:
            data = handle.read(MAX_READ_BYTES + 1)
        cut = len(data) > MAX_READ_BYTES
        lines = data[:MAX_READ_BYTES].decode(errors="replace").splitlines()
        if cut and lines:
            lines[-1] += f" [... {path} is larger than {MAX_READ_BYTES // 2**20} MiB: the rest is not shown]"
        start = max(1, start_line or 1)
        end = min(len(lines), end_line or len(lines))
        if start > max(len(lines), 1):
            raise ToolError(f"Error: start_line {start} is past the end of {path} ({len(lines)} lines)")
        return "\n".join(f"{n:6}\t{lines[n - 1]}" for n in range(start, end + 1))

    def _write_file(self, path: str, content: str) -> str:
        full = self._path(path)
        if full.exists() and not full.is_file():  # writing a FIFO would block lwm itself
            raise ToolError(f"Error: {path} is not a regular file")
        if len(content.encode(errors="surrogateescape")) > MAX_READ_BYTES:
            raise ToolError(f"Error: content is larger than {MAX_READ_BYTES // 2**20} MiB; write it in bash")
        created = next((p for p in [*reversed(full.parents), full] if not p.exists()), None)
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(content)
        if self._sandbox is not None:  # the sandboxed bash (another uid when lwm is root) may change it later
            self._sandbox.own(created or full)
        return f"Wrote {len(content.encode())} bytes to {path}"

    def _str_replace(self, path: str, old_str: str, new_str: str) -> str:
        full = self._path(path)
        if not full.is_file():
            raise ToolError(f"Error: {path} is not a regular file" if full.exists()
                            else f"Error: file not found: {path}")
        if full.stat().st_size > MAX_READ_BYTES:
            raise ToolError(f"Error: {path} is larger than {MAX_READ_BYTES // 2**20} MiB: edit it with bash (sed)")
        text = full.read_text(errors="replace")
        count = text.count(old_str) if old_str else 0
        if count != 1:
            raise ToolError(f"Error: old_str occurs {count} times in {path}; it must occur exactly once")
        full.write_text(text.replace(old_str, new_str, 1))
        line = text[: text.index(old_str)].count("\n") + 1
        return f"Replaced 1 occurrence in {path} at line {line}"

    def _list_dir(self, path: str = ".") -> str:
        full = self._path(path)
        if not full.is_dir():
            raise ToolError(f"Error: not a directory: {path}")
        # a name that is not UTF-8 is shown escaped (\\xff), as ls -b would: a lone surrogate cannot be recorded
        entries = sorted(os.fsencode(p.name).decode(errors="backslashreplace") + ("/" if p.is_dir() else "")
                         for p in full.iterdir() if p.name != ".git")
        return "\n".join(entries) if entries else "(empty directory)"

    def _search(self, pattern: str, path: str = ".") -> str:
        self._path(path)
        _check_argument("search", "pattern", pattern)
        # -D skip: a FIFO or device the agent made would block grep until the command's timeout
        out = self._bash(f"grep -rnE -D skip --exclude-dir=.git -- {shlex.quote(pattern)} {shlex.quote(path)} "
                         "| head -n 100")
        body = out.rsplit("[exit code:", 1)[0].rstrip("\n")
        return body or f"No matches for {pattern!r} in {path}"
