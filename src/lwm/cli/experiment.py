"""``lwm agent experiment``: a Sim RL experiment's arms, evaluated in the real environment, kept in a results
folder a new checkout finds (``lwm.agent.experiment``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from lwm.cli.common import fail

experiment_app = typer.Typer(help="A Sim RL experiment's results: arms evaluated in the real environment.",
                             no_args_is_help=True)
Results = Annotated[Path, typer.Argument(help="The results folder, e.g. results/simrl-lookup.")]


@experiment_app.command("add")
def add_cmd(results: Results,
            evals: Annotated[list[Path], typer.Argument(metavar="PATH",
                                                        help="lwm agent eval --mode real --out folders, one a seed.")],
            arm: Annotated[str, typer.Option(help="warm, real, sim, sim-retrieved, sim-control or sim-page.")],
            note: Annotated[str | None, typer.Option(help="What this arm is (its training config, budget).")] = None
            ) -> None:
    """Add an arm's real-environment episodes (episodes.jsonl) and its settings and commit (config.json); each
    episode keeps its eval's temperature (greedy and sampled evaluations are separate tables)."""
    from lwm.agent.experiment import add_arm

    try:
        count = add_arm(results, arm, evals, note)
    except (ValueError, OSError) as exc:
        raise fail(str(exc), 2) from None
    Console().print(f"{count} episodes of arm {arm} in {results / 'episodes.jsonl'}")


@experiment_app.command("table")
def table_cmd(results: Results,
              markdown: Annotated[bool, typer.Option(help="Print a Markdown table (for docs/sim-rl.md).")] = False,
              temperature: Annotated[float, typer.Option(
                  help="The evaluations at this policy temperature: 0 greedy, 1 sampled as GRPO samples.")] = 0.0,
              seed: Annotated[list[int] | None, typer.Option(
                  help="Only these seeds (repeat the option), e.g. a confirmation at new seeds.")] = None
              ) -> None:
    """Each arm's mean reward, and its difference from the warm start paired by task and seed, with s.e."""
    from lwm.agent.experiment import arm_table

    at = f", seeds {', '.join(map(str, seed))}" if seed else ""
    try:
        arms = arm_table(results, temperature, seed or ())
    except (ValueError, OSError) as exc:
        raise fail(str(exc), 2) from None
    if not arms:
        raise fail(f"no episodes evaluated at temperature {temperature:g}{at} in {results}", 2)
    columns = ("arm", "episodes", "seeds", "mean reward", "± s.e.", "vs warm: won/tied/lost", "paired diff",
               "± s.e.", "± s.e. by task", "tasks with spread across seeds")
    rows = [(a.arm, str(a.episodes), str(a.seeds), f"{a.mean:.3f}", f"{a.se:.3f}",
             f"{a.wins}/{a.ties}/{a.losses}" if a.diff is not None else "",
             "" if a.diff is None else f"{a.diff:+.3f}", "" if a.diff_se is None else f"{a.diff_se:.3f}",
             "" if a.diff_se_by_task is None else f"{a.diff_se_by_task:.3f}",
             "" if a.spread is None else f"{a.spread:.0%}") for a in arms]
    how = ("greedy" if not temperature else f"sampled at temperature {temperature:g}") + at
    _show(columns, rows, markdown, f"{results}: every arm evaluated in the real environment, {how}")


def _show(columns: Sequence[str], rows: Sequence[Sequence[str]], markdown: bool, title: str) -> None:
    """A table as Markdown (for the docs) or rich; the first column left-aligned, the numbers right."""
    if markdown:
        print("| " + " | ".join(columns) + " |\n|" + "---|" * len(columns))
        print("\n".join("| " + " | ".join(r) + " |" for r in rows))
        return
    table = Table(title=title)
    for k, col in enumerate(columns):
        table.add_column(col, justify="left" if k == 0 else "right")
    for row in rows:
        table.add_row(*row)
    Console().print(table)


@experiment_app.command("spread")
def spread_cmd(evals: Annotated[list[Path], typer.Argument(metavar="PATH",
                                                           help="One policy's sampled evals (--temperature 1), one "
                                                                "folder per seed.")]) -> None:
    """How often one task's sampled episodes disagree: the share of GRPO groups with a gradient at all."""
    from lwm.agent.experiment import sampling_spread

    try:
        s = sampling_spread(evals)
    except (ValueError, OSError) as exc:
        raise fail(str(exc), 2) from None
    Console().print(f"{s.tasks} tasks x {s.seeds} seeds: mean reward {s.mean:.3f}; tasks whose rewards differ "
                    f"across seeds {s.varied:.0%}; mean within-task s.d. {s.within_sd:.3f}")


@experiment_app.command("rewards")
def rewards_cmd(runs: Annotated[list[Path], typer.Argument(metavar="PATH",
                                                           help="lwm agent train output folders (their rollouts/).")],
                markdown: Annotated[bool, typer.Option(help="Print a Markdown table (for docs/sim-rl.md).")] = False
                ) -> None:
    """Each run's lookup rollouts scored against the real gold row and against the page they were shown: how
    often a simulator's wrong page made the two rewards disagree."""
    from lwm.agent.experiment import reward_sources

    try:
        found = [reward_sources(run) for run in runs]
    except (ValueError, OSError) as exc:
        raise fail(str(exc), 2) from None
    columns = ("run", "lookup rollouts", "gold reward", "page reward", "same", "page > gold", "gold > page")
    rows = [(r.run, str(r.rollouts), f"{r.gold:.2f}", f"{r.page:.2f}", str(r.same), str(r.page_higher),
             str(r.gold_higher)) for r in found]
    _show(columns, rows, markdown, "training rollouts: the reward against the gold row and against the page shown")
