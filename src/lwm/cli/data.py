"""``lwm data``: split collections into train / held-out by trajectory, show their statistics, build training
rows, and pack transitions for retrieval."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from lwm.cli.common import fail
from lwm.data import read_trajectories, write_trajectories
from lwm.data.build import build
from lwm.data.sources import domain_counts, source_of
from lwm.data.sources import split as split_trajectories
from lwm.types import Trajectory

data_app = typer.Typer(help="Work with trajectory files.", no_args_is_help=True)


def load(paths: list[Path]) -> list[Trajectory]:
    """Every trajectory of ``paths``; unreadable lines are named on stderr, and a missing path or no
    trajectories at all is an error (a command on nothing must not look like a result)."""
    for path in paths:
        if not path.exists():
            raise fail(f"{path}: no such file or folder", 2)
    problems: list[str] = []
    trajectories = [t for p in paths for t in read_trajectories(p, problems)]
    warn = Console(stderr=True)
    for problem in problems:
        warn.print(f"[yellow]{problem}[/]", markup=True, highlight=False)
    if not trajectories:
        skipped = f" ({len(problems)} unreadable lines)" if problems else ""
        raise fail(f"no trajectories in {', '.join(str(p) for p in paths)}{skipped}")
    return trajectories


@data_app.command("split")
def split(
    inputs: Annotated[list[Path], typer.Argument(metavar="PATH",
                                                 help="Collection folders or trajectories.jsonl files.")],
    out: Annotated[Path, typer.Option(help="Folder for train.jsonl and heldout.jsonl.")],
    heldout: Annotated[float, typer.Option(help="Share of trajectories (or of each domain's sources) held out.")] = 0.2,
    seed: Annotated[int, typer.Option(help="Changes which trajectories are held out.")] = 0,
    by: Annotated[str, typer.Option(help="'trajectory', or 'source': hold out whole environments (an MCP server, "
                                         "an app, a site, a project), which measures transfer, not memory.")]
    = "trajectory",
    keep: Annotated[list[str] | None, typer.Option(help="With --by source: a source never held out (repeat it), "
                                                     "e.g. one an existing model was trained on.")] = None,
    hold: Annotated[list[str] | None, typer.Option(help="With --by source: hold out exactly these sources (repeat "
                                                     "it) instead of a seeded share, e.g. to redo a published "
                                                     "split on a grown corpus.")] = None,
) -> None:
    """Split by trajectory (never by turn, so no held-out turn's history is seen in training) or by source."""
    console = Console()
    trajectories = load(inputs)
    try:
        made = split_trajectories(trajectories, heldout, seed, by, keep or (), hold or ())
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    if by == "source":
        table = Table(title="sources held out whole")
        for column in ("domain", "sources", "held out", "held-out trajectories"):
            table.add_column(column)
        for domain, held in sorted(made.held_sources.items()):
            every = sorted({source_of(t) for t in trajectories if t.domain == domain})
            table.add_row(domain, str(len(every)), ", ".join(sorted(held)) or "[yellow]none: one source only[/]",
                          str(sum(1 for t in made.heldout if t.domain == domain)))
        console.print(table)
    write_trajectories(out / "train.jsonl", made.train)
    write_trajectories(out / "heldout.jsonl", made.heldout)
    console.print(f"{len(made.train)} train and {len(made.heldout)} held-out trajectories written to {out}")


@data_app.command("stats")
def stats(inputs: Annotated[list[Path], typer.Argument(metavar="PATH",
                                                       help="Collection folders or .jsonl files.")]) -> None:
    """Counts and lengths per domain, and its distinct environments (sources: servers, apps, sites, projects)."""
    console = Console()
    table = Table(title="trajectories")
    for column in ("domain", "trajectories", "sources", "turns", "turns/traj (median)", "obs chars (median)",
                   "step s (median)"):
        table.add_column(column, justify="right" if column != "domain" else "left")
    for c in domain_counts(load(inputs)):
        table.add_row(c.domain, str(c.trajectories), str(c.sources), str(c.turns), f"{c.turns_median:g}",
                      "-" if c.observation_chars_median is None else f"{c.observation_chars_median:g}",
                      "-" if c.step_seconds_median is None else f"{c.step_seconds_median:.3f}")
    console.print(table)


@data_app.command("build")
def build_cmd(
    inputs: Annotated[list[Path], typer.Argument(metavar="PATH", help="Train-split trajectories (folder or .jsonl).")],
    stage: Annotated[str, typer.Option(help="cpt, sft or rl.")],
    out: Annotated[Path, typer.Option(help="The JSONL to write.")],
    heldout: Annotated[Path | None, typer.Option(help="Held-out trajectories: refuse any that reach training.")]
    = None,
    compact: Annotated[bool, typer.Option(help="Compact system prompts (for small models).")] = False,
    block_chars: Annotated[int, typer.Option(help="cpt: characters per packed block.")] = 8000,
    max_tokens: Annotated[int | None, typer.Option(help="sft/rl: tokens per row (prompt + answer); the oldest "
                                                        "turns are dropped to fit, as at inference.")] = None,
    take: Annotated[list[str] | None, typer.Option(help="sft/rl: DOMAIN=N keeps a seeded sample of N rows of "
                                                        "that domain (repeat; unnamed domains are dropped).")]
    = None,
    seed: Annotated[int, typer.Option(help="Seed for --take.")] = 0,
    edits: Annotated[bool, typer.Option("--edits", help="sft/rl: prompts say edits are welcome, and each answer is "
                                        "the shortest of the whole observation and an edit against the previous, "
                                        "an earlier or a retrieved one.")] = False,
    retrieve: Annotated[bool, typer.Option("--retrieve", help="sft/rl: show each prompt the nearest real "
                                           "transitions of the inputs (never the row's own trajectory).")] = False,
    examples: Annotated[int, typer.Option(help="With --retrieve: transitions per prompt.")] = 2,
    examples_when: Annotated[str, typer.Option(help="With --retrieve: every-step (in the last user message), "
                                               "no-base, or kept (where first shown, kept after).")] = "every-step",
) -> None:
    """Build a training set for one stage, in the layout the WorldModel uses at inference."""
    console = Console()
    trajectories = load(inputs)
    guided = None
    if edits or retrieve:
        from lwm.data.build import Guidance
        from lwm.retrieval import TransitionIndex

        with console.status("indexing the inputs' transitions for --retrieve"):
            index = TransitionIndex.build(trajectories) if retrieve else None
        guided = Guidance(edits=edits, retriever=index, examples=examples, examples_when=examples_when)
    heldout_ids = {t.id for t in read_trajectories(heldout)} if heldout else set()
    skipped: list[str] = []
    try:
        counts = {domain: int(n) for domain, _, n in (item.partition("=") for item in take or [])}
    except ValueError:
        raise typer.BadParameter(f"--take wants DOMAIN=N, got {take}") from None
    try:
        count = build(stage, trajectories, out, heldout_ids=heldout_ids, compact=compact,  # type: ignore[arg-type]
                      block_chars=block_chars, max_tokens=max_tokens, skipped=skipped, take=counts, seed=seed,
                      guided=guided)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    console.print(f"{count} {stage} rows from {len(trajectories)} trajectories written to {out}")
    if skipped:
        console.print(f"[yellow]{len(skipped)} turns left out: their system prompt and action alone exceed "
                      f"{max_tokens} tokens (e.g. {', '.join(skipped[:3])})[/]")


@data_app.command("transitions")
def transitions_cmd(
    inputs: Annotated[list[Path], typer.Argument(metavar="PATH",
                                                 help="Collection folders or .jsonl files (a split's train side).")],
    out: Annotated[Path, typer.Option(help="The file to write, named *.transitions.jsonl.xz.")],
) -> None:
    """Pack the transitions that retrieval shows (action, the end of the observation before, the observation
    after, the source) into one small file that --retrieve takes like a collection: how a model ships with
    the examples it was trained to read."""
    from lwm.retrieval import TRANSITIONS_SUFFIX, transitions, write_transitions

    if not out.name.endswith(TRANSITIONS_SUFFIX):
        raise fail(f"--out must end with {TRANSITIONS_SUFFIX} (so --retrieve knows what it holds)", 2)
    items = transitions(load(inputs))
    count = write_transitions(items, out)
    Console().print(f"{count} transitions of {len({t.source for t in items})} sources written to {out} "
                    f"({out.stat().st_size / 1e6:.1f} MB)")


def register(app: typer.Typer) -> None:
    app.add_typer(data_app, name="data")
