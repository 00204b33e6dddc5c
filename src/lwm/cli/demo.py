"""``lwm demo``: a real sandboxed terminal episode, predicted step by step by the world model, scored.

Types a handful of ordinary commands in the real terminal (bash in tmux in bubblewrap) through the episode
loop (``lwm.rollout.play``), then benchmarks the world model on that episode with ``lwm.bench``'s pipeline
(each screen predicted from the real history before it, rule-judged, scored, reported): the same run folder a
``lwm bench run`` writes, so the demo's numbers are a benchmark's. Offline with the default embedded model.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import gymnasium as gym
import typer
from rich.console import Console
from rich.table import Table

from lwm import __version__
from lwm.backends import DEFAULT_SPEC
from lwm.bench import pipeline
from lwm.bench.rules import DIMENSIONS
from lwm.bench.run import judgements
from lwm.bench.samples import export_trajectories, write_samples
from lwm.cli import options as o
from lwm.cli.bench import REPORTER, bench_errors, show_scores
from lwm.cli.common import fail
from lwm.envs.registration import open_env
from lwm.rollout.loop import Episode, play
from lwm.rollout.policies import ScriptedPolicy
from lwm.rollout.task_env import recorder
from lwm.runfolder import update_run
from lwm.types import Trajectory

COMMANDS = [
    "mkdir project && cd project",
    "printf 'apples 3\\npears 5\\nplums 2\\n' > fruit.txt",
    "ls -l",
    "sort -k2 -n fruit.txt",
    "printf 'import sys\\nprint(sum(int(l.split()[1]) for l in open(sys.argv[1])))\\n' > total.py",
    "python3 total.py fruit.txt",
    "cat missing.txt",
]


def record(console: Console) -> Trajectory:
    """The commands typed in the real terminal, one per policy turn, recorded as the episode's trajectory."""
    opened: list[gym.Env] = []

    def terminal(_: Episode) -> gym.Env:
        opened.append(open_env("terminal", env_options={"width": 80, "height": 20}, record=True))
        return opened[-1]

    typist = ScriptedPolicy(["```json\n" + json.dumps([{"keystrokes": c + "\n", "duration": 0.4}]) + "\n```"
                             for c in COMMANDS], name="demo-commands")
    with console.status("recording the real terminal episode..."):
        (episode,) = play([Episode(None, domain="terminal", seed=0)], typist, terminal, max_steps=len(COMMANDS),
                          workers=1)
    recorded = recorder(opened[0]) if opened else None
    if episode.error or recorded is None or recorded.trajectory is None:
        raise RuntimeError(episode.error or "nothing was recorded")
    return recorded.trajectory


def last_lines(text: str, count: int = 6) -> str:
    return "\n".join(text.splitlines()[-count:])


def model_note(model: str) -> str | None:
    """What the demo's reader should know about the model it ran: lwm-mini's measured fidelity and speed, read
    from its manifest (so the text follows the shipped model), or that the plain base is not a world model."""
    from lwm.backends.embedded import packaged_manifest

    if model in (DEFAULT_SPEC, "embedded:lwm-mini"):
        manifest = packaged_manifest("lwm-mini")
        overall = manifest.get("loso_overall") or {}
        return (f"The model is lwm-mini v{str(manifest.get('version', '?')).split()[0]}, lwm's default world model "
                "(SmolLM2-135M trained by lwm to write edits and copy from real transitions it ships with; offline, "
                f"in-process): on 20 environments it never saw (data/loso) it scores {overall.get('lwm-mini', '?')} "
                f"against its untrained base's {overall.get('base', '?')} (--model embedded:smollm2). Its speed: "
                f"{manifest.get('session_speed', 'not measured')}. For real predictions serve a world model and use "
                "--model openai:NAME --base-url URL.")
    if model in ("embedded", "embedded:smollm2"):
        return ("The model is plain SmolLM2-135M, lwm-mini's untrained base: it shows the loop, not a world model "
                "(it often echoes the prompt or the action). The default, --model embedded:lwm-mini, is trained.")
    return None


@o.model_options(exclude=("prompts_dir",), max_tokens=160)
def demo(
    out: Annotated[Path, typer.Option(help="Where the report goes.")] = Path("lwm-demo"),
    *,
    options: o.ModelOptions,
) -> None:
    """Record a real terminal episode, predict every step with the world model, compare and score."""
    console = Console()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    try:
        trajectory = record(console)
    except RuntimeError as exc:
        raise fail(f"the real terminal could not start: {exc}") from None
    data = out / "samples"
    write_samples(export_trajectories([trajectory]), data)
    with bench_errors():
        by_key = {s.key: s for s in pipeline.infer(data, out, options, concurrency=1, force_new=True,
                                                   reporter=REPORTER)}
        pipeline.judge(by_key, out, pipeline.JudgeOptions("rules"), concurrency=1, force_new=True, reporter=REPORTER)
    judged = judgements(out).by_id()
    model = next((j.model for j in judged.values() if j.model), None) or str(options.model)
    table = Table(title=f"real terminal vs {model}", show_lines=True)
    for col in ("step", "command", "real (last lines)", "predicted (last lines)", "score"):
        table.add_column(col, overflow="fold")
    for k, turn in enumerate(trajectory.turns, start=1):
        key = f"{trajectory.id}-t{k}"
        row = judged.get(key)
        table.add_row(str(k), COMMANDS[k - 1], last_lines(turn.observation.content),
                      last_lines(row.prediction if row else "(no prediction)"),
                      f"{row.reward * 100:.0f}" if row else "-")
    console.print(table)
    update_run(out, demo={"model": model, "episode": trajectory.id, "commands": len(COMMANDS), "lwm": __version__,
                          "started": started, "finished": datetime.now(UTC).isoformat(timespec="seconds")})
    with bench_errors():
        show_scores(out, by_key)
    console.print(f"(dimensions: {', '.join(DIMENSIONS)})")
    note = model_note(str(options.model))
    if note:
        console.print(note)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
