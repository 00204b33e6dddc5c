"""``lwm collect``: record real trajectories with an explorer policy, in parallel, resumably."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from lwm.cli import options as o
from lwm.cli.common import fail
from lwm.collect import EpisodeResult, plan, run
from lwm.collect.presets import PRESETS, plan_preset
from lwm.collect.runner import EnvironmentStartError, preflight
from lwm.registry import names


def collect(
    out: Annotated[Path, typer.Option(help="Collection folder (trajectories.jsonl + run.json; a rerun resumes it).")],
    domain: Annotated[str | None, typer.Option(help="Real environment: terminal, swe, mcp, search, web, os.")] = None,
    preset: Annotated[str | None, typer.Option(help="A named collection instead of one domain: "
                                               + ", ".join(PRESETS))] = None,
    episodes: Annotated[int, typer.Option(help="Episodes in the collection (finished ones are skipped).")] = 10,
    max_steps: Annotated[int, typer.Option(help="Steps per episode.")] = 15,
    seed: Annotated[int, typer.Option(help="Seed of the collection; episode i uses a seed derived from it.")] = 0,
    workers: Annotated[int, typer.Option(help="Episodes run at once, each in its own process.")] = 1,
    mistake_rate: Annotated[float, typer.Option(help="Share of deliberately wrong actions.")] = 0.15,
    project: Annotated[Path | None, typer.Option(help="swe: a project folder or .tar.gz sdist.")] = None,
    policy: Annotated[str, typer.Option(help="explorer, or agent:<model spec> for an LLM agent.")] = "explorer",
    base_url: Annotated[str | None, typer.Option(help="For an agent policy on an OpenAI-compatible server.")] = None,
    executor: Annotated[str, typer.Option(help="process (local worker processes) or ray (Ray tasks; RAY_ADDRESS "
                                          "picks a cluster).")] = "process",
    env_option: o.EnvOption = None,
    part: Annotated[list[str] | None, typer.Option(help="With --preset: only this part, domain:tag (e.g. "
                                                   "terminal:ed; repeatable); its episodes are the preset's own.")]
    = None,
) -> None:
    """Run explorer episodes in a real environment and record every step."""
    console = Console()
    if preset:
        try:
            todo, skipped = plan_preset(preset, seed, out, mistake_rate, part or ())
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None
        return _run(console, todo, skipped, workers, out, preset, executor)
    have = ", ".join(sorted(set(names("env")) & set(names("explorer"))))
    if domain is None:
        raise fail(f"say which real environment to record: --domain ({have}) or --preset ({', '.join(PRESETS)})", 2)
    if domain not in names("env") or domain not in names("explorer"):
        raise fail(f"no real environment with an explorer for {domain!r}; have: {have}", 2)
    options = {**({"project": str(project)} if project else {}), **o.env_options(env_option)}
    policy_options = {"base_url": base_url} if base_url else {}
    try:
        todo, skipped = plan(domain, episodes, max_steps, seed, out, options, mistake_rate, "", policy,
                             policy_options)
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    if todo:
        try:
            preflight(domain, options)
        except EnvironmentStartError as exc:
            raise fail(str(exc), 2) from None
    _run(console, todo, skipped, workers, out, domain, executor)


def _run(console: Console, todo: list, skipped: int, workers: int, out: Path, label: str, executor: str) -> None:
    if skipped:
        console.print(f"resuming: {skipped} finished episodes in {out} are kept")
    failures: list[EpisodeResult] = []
    nodes: Counter[str] = Counter()
    turns = 0
    agent = [0, 0]
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[turns]} turns"), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console) as progress:
        task = progress.add_task(f"collect {label}", total=len(todo), turns=0)

        def on_result(result: EpisodeResult) -> None:
            nonlocal turns
            turns += result.turns
            if result.agent_actions:
                agent[0] += result.agent_actions[0]
                agent[1] += result.agent_actions[1]
            if result.node:
                nodes[result.node[:8]] += 1
            if result.error:
                failures.append(result)
                progress.console.print(f"[red]episode {result.id} failed:[/] {result.error}", markup=True)
            progress.update(task, advance=1, turns=turns)

        run(todo, workers, on_result, executor)
    console.print(f"{len(todo) - len(failures)} episodes recorded ({turns} turns) in {out}"
                  + (f"; {len(failures)} failed (rerun the command to retry them)" if failures else ""))
    if len(nodes) > 1 or executor == "ray":
        console.print("episodes per Ray node: " + ", ".join(f"{node} {count}" for node, count in nodes.most_common()))
    if sum(agent):
        console.print(f"the agent chose {agent[0]} of {sum(agent)} actions; its explorer chose the other {agent[1]} "
                      "(replies that were no valid action)")
    if failures:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("collect")(collect)
