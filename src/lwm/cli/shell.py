"""``lwm shell``: an interactive session with a simulated environment.

Typed lines become actions (the domain's ``from_shell``), the world model answers, and the history
carries over. For the terminal it behaves like one: the prompt is the simulated shell's own last
line, only new output is printed, Ctrl+C abandons the line (or the running prediction) and Ctrl+D
leaves. Line editing and history come from prompt_toolkit; piped input works line by line.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from lwm.backends import BackendError
from lwm.cli import options as o
from lwm.cli.common import fail, load_state
from lwm.domains import ActionError, get_domain
from lwm.envs.registration import open_env
from lwm.forms import answer_note
from lwm.serve.mirror import invalid_call
from lwm.types import Trajectory, read_tools
from lwm.worldmodel import ContextOverflowError, WorldModel

PROMPT_LINE = re.compile(r"[$#>%]\s?$")


def split_screen(previous: str, screen: str, typed: str) -> tuple[str, str | None]:
    """The new output of a terminal screen and its trailing prompt (None when the shell is busy)."""
    text = screen
    if previous.strip() and text.startswith(previous.rstrip()):
        text = text[len(previous.rstrip()):]
    lines = text.strip("\n").split("\n")
    if lines and typed.strip() and lines[0].rstrip().endswith(typed.strip()):
        lines = lines[1:]  # the echo of what was just typed
    prompt = lines.pop() if lines and PROMPT_LINE.search(lines[-1]) else None
    return "\n".join(lines), prompt


class SimShell:
    """A ``SimEnv`` session (recorded by ``RecordTrajectory``, saved after every step) driven by typed lines."""

    def __init__(self, wm: WorldModel, trajectory: Trajectory, console: Console, save: Path | None = None):
        self.wm, self.console = wm, console
        self.domain = get_domain(trajectory.domain)
        self.env = open_env(self.domain.name, wm, save=save, record=True, trajectory_id=trajectory.id)
        self.screen, _ = self.env.reset(options={"trajectory": trajectory})
        self.terminal = self.domain.action_kind == "keystrokes"
        _, prompt = split_screen("", self.screen, "") if self.terminal else ("", None)
        self.prompt = prompt + (" " if not prompt.endswith(" ") else "") if prompt else self.domain.shell_prompt

    @property
    def trajectory(self) -> Trajectory:
        assert self.env.trajectory is not None
        return self.env.trajectory

    def banner(self) -> str:
        return (f"lwm shell - simulated {self.domain.title} via {self.wm.backend.name}. "
                "Ctrl+C cancels, Ctrl+D quits.")

    def handle(self, line: str) -> str:
        """Run one typed line; returns the text to show (an error message for a bad action)."""
        if not line.strip():
            return ""
        try:
            action = self.domain.from_shell(line)
        except ActionError as exc:
            return f"lwm: {exc}"
        tools = self.trajectory.context.tools
        if self.domain.action_kind == "tool_call" and tools and (refused := invalid_call(tools, action)):
            # as `lwm serve mcp` does: what the real server would refuse is not asked of the model
            return f"{refused} (tools: {', '.join(t.get('name', '?') for t in tools)})"
        try:
            with self.console.status("simulating...", spinner="dots"):
                observation, _, _, _, info = self.env.step(action)
        except (BackendError, ContextOverflowError) as exc:
            return f"lwm: {exc}"
        if said := answer_note(info, observation):  # as `lwm simulate` says it, on stderr
            Console(stderr=True, highlight=False).print(f"lwm: {said}", style="dim", markup=False)
        if not self.terminal:
            return observation
        output, prompt = split_screen(self.screen, observation, line)
        self.screen = observation
        if prompt:
            self.prompt = prompt if prompt.endswith(" ") else prompt + " "
        return output

    def run(self, read: Callable[[str], str]) -> Trajectory:
        self.console.print(self.banner(), style="dim", highlight=False)
        while True:
            try:
                line = read(self.prompt)
            except KeyboardInterrupt:
                self.console.print("^C", highlight=False, markup=False)
                continue
            except EOFError:
                break
            try:
                shown = self.handle(line)
            except KeyboardInterrupt:
                self.console.print("^C (prediction abandoned)", highlight=False, markup=False)
                continue
            if shown:
                self.console.print(shown, highlight=False, markup=False)
        return self.trajectory


def stdin_line(prompt: str) -> str:
    """Piped input: one line per action, no prompt echo."""
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")


@o.model_options(**o.INTERACTIVE)
def shell(
    domain: Annotated[str, typer.Option(help="mcp, search, terminal, swe, web, os, android.")] = "terminal",
    tools: Annotated[Path | None, typer.Option(help="Tool definitions for mcp/swe: a JSON list of MCP tools, or "
                                                 "{\"tools\": [...]} as tools/list returns it.")] = None,
    context: Annotated[Path | None, typer.Option(help="Context JSON (task, tools, initial_state).")] = None,
    history: Annotated[Path | None, typer.Option(help="Trajectory JSON to continue.")] = None,
    save: Annotated[Path | None, typer.Option(help="Write the session's trajectory here after every step.")] = None,
    *,
    options: o.ModelOptions,
) -> None:
    """Talk to a simulated environment interactively."""
    trajectory = load_state(None if history else domain, context, history)
    if tools is not None:
        try:
            listed = read_tools(tools)
        except ValueError as exc:
            raise fail(str(exc), 2) from None
        trajectory = trajectory.model_copy(update={"context": trajectory.context.model_copy(update={"tools": listed})})
    try:
        wm = options.world_model()
    except (BackendError, ValueError, KeyError) as exc:
        raise fail(str(exc)) from None
    console = Console(highlight=False)
    sim = SimShell(wm, trajectory, console, save)
    if sys.stdin.isatty():
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import WordCompleter

        names = [t.get("function", t).get("name", "") for t in trajectory.context.tools]
        session: PromptSession[str] = PromptSession(completer=WordCompleter(names) if names else None)
        sim.run(session.prompt)
    else:
        sim.run(stdin_line)
    if save:
        console.print(f"trajectory saved to {save}", style="dim")


def register(app: typer.Typer) -> None:
    app.command("shell")(shell)
