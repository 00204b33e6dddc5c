"""``lwm agent``: task suites, one agent loop in the simulator or the real environment, evaluation."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from statistics import mean
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from lwm.agent.evaluate import EvalRow, compare_runs, eval_tasks, family_means, run_tasks
from lwm.backends import DEFAULT_SPEC
from lwm.cli.common import fail, report_training, stage_config
from lwm.data.jsonl import JsonlFile, write_dicts
from lwm.rollout.task_env import WORLD_MODEL_TOKENS
from lwm.rollout.tasks import UnknownTaskError, get_task, tasks
from lwm.runfolder import SettingsChanged

agent_app = typer.Typer(help="Agents on task suites, in the simulator or the real environment.", no_args_is_help=True)
tasks_app = typer.Typer(help="The task suites (train / held-out, with checkers).", no_args_is_help=True)
agent_app.add_typer(tasks_app, name="tasks")
console = Console()

Mode = Annotated[str, typer.Option(help="sim (a world model plays the environment) or real.")]
PolicySpec = Annotated[str, typer.Option("--policy", help="The agent: a model spec (embedded, openai:NAME — its "
                                         "server from OPENAI_BASE_URL and OPENAI_API_KEY —, transformers:DIR, "
                                         "hf:DIR), 'expert' (the scripted expert of each task) or 'reader' (searches "
                                         "like the expert, answers with what the page shows).")]
WorldModelSpec = Annotated[str, typer.Option("--world-model", help="With --mode sim: the world model's spec.")]
MaxSteps = Annotated[int, typer.Option(help="Most actions per episode.")]
Out = Annotated[Path | None, typer.Option(help="Collection folder: each episode's trajectory goes here.")]
Families = Annotated[list[str] | None, typer.Option("--family", help="Only this task family (repeatable).")]
WorldModelTokens = Annotated[int, typer.Option(help="With --mode sim: most tokens in one simulated observation.")]
WorldModelRetrieve = Annotated[list[Path] | None, typer.Option(
    "--world-model-retrieve", help="With --mode sim: trajectories whose real transitions the world model retrieves at "
    "each step, as --retrieve (repeatable; none: the model's own).")]
ControlFile = Annotated[Path | None, typer.Option("--control", help="A control spec (YAML): injected faults, drift "
                                                  "and a world bible around every step, sim or real; each episode "
                                                  "draws its own perturbations; the task's check reads the state "
                                                  "unperturbed.")]


@tasks_app.command("list")
def tasks_list(domain: Annotated[str | None, typer.Option(help="search, mcp or terminal.")] = None) -> None:
    """Each suite's families with their train and held-out task counts."""
    table = Table(title="lwm task suites")
    for col in ("domain", "family", "train", "held out", "check"):
        table.add_column(col, justify="left" if col in ("domain", "family", "check") else "right")
    counts: Counter[tuple[str, str, str]] = Counter()
    kinds: dict[tuple[str, str], str] = {}
    for task in tasks(domain):
        counts[(task.domain, task.family, task.split)] += 1
        kinds[(task.domain, task.family)] = task.check.kind
    for (d, f), kind in sorted(kinds.items()):
        table.add_row(d, f, str(counts[(d, f, "train")]), str(counts[(d, f, "heldout")]), kind)
    table.add_section()
    table.add_row("all", "", str(sum(v for k, v in counts.items() if k[2] == "train")),
                  str(sum(v for k, v in counts.items() if k[2] == "heldout")), "")
    console.print(table)


@tasks_app.command("show")
def tasks_show(task_id: Annotated[str, typer.Argument(help="A task id, e.g. search/syscall-0004.")]) -> None:
    """One task: instruction, environment, checker (and gold table)."""
    try:
        task = get_task(task_id)
    except (UnknownTaskError, FileNotFoundError) as exc:
        raise fail(str(exc), 2) from None
    console.print_json(task.model_dump_json(exclude={"context": {"tools"}}))


@tasks_app.command("build")
def tasks_build(domain: Annotated[str, typer.Option(help="search, mcp or terminal.")],
                seed: Annotated[int, typer.Option(help="Seed of the task draw.")] = 0,
                out: Annotated[Path | None, typer.Option(help="Where to write (default: the suite in lwm).")] = None
                ) -> None:
    """(Re)build a suite from its sources: search from the corpus (every gold row checked against the real
    search engine), mcp and terminal from their templates (mcp asks the real servers for their tools)."""
    from lwm.agent.suite_build import build_suite

    with console.status(f"building the {domain} suite..."):
        try:
            path, built = build_suite(domain, seed, out)
        except ValueError as exc:
            raise fail(str(exc), 2) from None
    split = Counter(t.split for t in built)
    console.print(f"{len(built)} tasks ({split['train']} train, {split['heldout']} held out) written to {path}")


@contextmanager
def _exits() -> Iterator[None]:
    """A bad policy, world model or control file, or an eval folder of other settings: exit 2 with the reason."""
    try:
        yield
    except (ValueError, KeyError, RuntimeError, OSError, SettingsChanged) as exc:
        raise fail(str(exc), 2) from None


def _summary(rows: list[EvalRow], title: str) -> Table:
    table = Table(title=title)
    for col in ("domain", "family", "episodes", "mean reward", "± s.e.", "errors", "steps/episode"):
        table.add_column(col, justify="left" if col in ("domain", "family") else "right")
    for m in family_means(rows):
        table.add_row(m.domain, m.family, str(m.episodes), f"{m.mean:.3f}", f"{m.se:.3f}", str(m.errors),
                      f"{m.steps:.1f}")
    return table


@agent_app.command("run")
def run_cmd(task: Annotated[str, typer.Option(help="A task id (lwm agent tasks list).")], mode: Mode = "real",
            policy: PolicySpec = "expert", world_model: WorldModelSpec = DEFAULT_SPEC, max_steps: MaxSteps = 8,
            out: Out = None, seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
            world_model_tokens: WorldModelTokens = WORLD_MODEL_TOKENS, control: ControlFile = None,
            world_model_retrieve: WorldModelRetrieve = None) -> None:
    """One episode of one task; prints its result (reward, steps, answer, error) as JSON, records the trajectory
    with --out."""
    try:
        chosen = get_task(task)
    except (UnknownTaskError, FileNotFoundError) as exc:
        raise fail(str(exc), 2) from None
    with _exits():
        row = run_tasks([chosen], mode, policy, world_model, max_steps=max_steps, out=out, batch=1, seed=seed,
                        world_model_tokens=world_model_tokens, control=control, status=console.status,
                        world_model_retrieve=world_model_retrieve or ())[0]
    console.print_json(row.model_dump_json())
    if row.error:
        console.print(f"[yellow]episode ended with an error: {row.error}[/]")


@agent_app.command("eval")
def eval_cmd(domain: Annotated[str, typer.Option(help="search, mcp or terminal.")] = "search",
             split: Annotated[str, typer.Option(help="heldout or train.")] = "heldout", mode: Mode = "real",
             policy: PolicySpec = "expert", world_model: WorldModelSpec = DEFAULT_SPEC, max_steps: MaxSteps = 8,
             family: Families = None,
             limit: Annotated[int | None, typer.Option(help="Only the first N tasks.")] = None,
             batch: Annotated[int, typer.Option(help="Episodes run together (one policy batch per step).")] = 8,
             out: Out = None, seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
             max_tokens: Annotated[int, typer.Option(help="Most tokens in one policy reply.")] = 160,
             temperature: Annotated[float, typer.Option(help="Policy temperature (0 = greedy).")] = 0.0,
             world_model_tokens: WorldModelTokens = WORLD_MODEL_TOKENS, control: ControlFile = None,
             world_model_retrieve: WorldModelRetrieve = None,
             executor: Annotated[str, typer.Option(help="local (this process) or ray (batches as tasks on the Ray "
                                                   "cluster RAY_ADDRESS names; docs/scaling.md).")] = "local") -> None:
    """Run a policy on a suite's tasks; mean reward per family with standard errors. With --out, each batch's
    results are appended to OUT/results.jsonl as it ends, and a rerun goes on from there."""
    chosen = tasks(domain, split if split in ("train", "heldout") else None, family or ())[:limit]
    if not chosen:
        raise fail(f"no {domain} {split} tasks{' in ' + ', '.join(family) if family else ''} "
                   "(lwm agent tasks list)", 2)
    with _exits():
        rows = eval_tasks(chosen, mode, policy, world_model, max_steps=max_steps, out=out, batch=batch, seed=seed,
                          max_tokens=max_tokens, temperature=temperature, world_model_tokens=world_model_tokens,
                          control=control, status=console.status, say=console.print,
                          world_model_retrieve=world_model_retrieve or (), executor=executor)
    console.print(_summary(rows, f"{policy} on {len(rows)} {domain} {split} tasks, {mode} environment"))


@agent_app.command("compare")
def compare_cmd(runs: Annotated[list[str], typer.Argument(metavar="RUN",
                                                          help="lwm agent eval --out folders; the first is the "
                                                              "baseline. A+B+C: one policy's folders at several "
                                                              "seeds, as one run.")]) -> None:
    """Evals of several policies on the same tasks, episode by episode: each run's mean reward, and its paired
    difference from the first run's on the episodes both ran (same task and seed; won / tied / lost, mean,
    standard error)."""
    try:
        compared, differ = compare_runs([[Path(p) for p in run.split("+")] for run in runs])
    except (FileNotFoundError, ValueError) as exc:
        raise fail(str(exc), 2) from None
    table = Table(title=f"paired against {runs[0]} (reward: item F1 / checker)")
    for col in ("run", "policy", "mode", "episodes", "mean reward", "± s.e.", "vs first: pairs", "won/tied/lost",
                "mean diff", "± s.e."):
        table.add_column(col, justify="left" if col in ("run", "policy", "mode") else "right")
    for c in compared:
        colour = "green" if c.diff > 0 else "red" if c.diff < 0 else "white"
        table.add_row(c.run, c.settings.get("policy", "?"), c.settings.get("mode", "?"), str(c.tasks),
                      "-" if c.mean is None else f"{c.mean:.3f}", f"{c.se:.3f}", str(c.pairs),
                      f"{c.wins}/{c.ties}/{c.losses}", f"[{colour}]{c.diff:+.3f}[/]",
                      "-" if c.diff_se is None else f"{c.diff_se:.3f}")
    console.print(table)
    if differ:
        Console(stderr=True).print(f"[yellow]warning: the runs differ in {', '.join(sorted(differ))}: not a "
                                   "like-for-like comparison[/]", highlight=False)


@agent_app.command("train")
def train_cmd(config: Annotated[Path, typer.Option(help="YAML or JSON config (lwm.agent.train.AgentRLConfig "
                                                       "fields and any GRPOConfig field).")],
              mode: Annotated[str | None, typer.Option(help="sim or real (overrides the config's mode).")] = None,
              set_: Annotated[list[str] | None, typer.Option("--set", help="Override a field: key=value.")] = None
              ) -> None:
    """GRPO of the policy on a suite's train tasks, rollouts in the simulator or the real environment; resumes."""
    from lwm.agent.train import AgentRLConfig, train_agent

    cfg = stage_config(AgentRLConfig, config, [*(set_ or []), *([f"mode={mode}"] if mode else [])])
    try:
        metrics = train_agent(cfg)
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    report_training(cfg, metrics)


@agent_app.command("demos")
def demos_cmd(out: Annotated[Path, typer.Option(help="SFT rows (JSONL) for lwm train sft.")],
              domain: Annotated[str, typer.Option(help="search, mcp or terminal.")] = "search",
              family: Families = None,
              limit: Annotated[int | None, typer.Option(help="Only the first N train tasks.")] = None,
              record: Out = None) -> None:
    """Scripted expert episodes on the train tasks in the REAL environment, as SFT rows: the warm start a
    small policy needs before RL (it must be able to call a tool at all)."""
    from lwm.agent.train import demonstrations

    with _exits():
        rows = run_tasks(tasks(domain, "train", family or ())[:limit], "real", "expert", out=record,
                         keep_episodes=True, status=console.status)
    kept = demonstrations([r.episode for r in rows if r.episode])
    write_dicts(out, kept)
    console.print(f"{len(kept)} rows from {sum(r.reward == 1.0 for r in rows)} of {len(rows)} solved episodes "
                  f"written to {out}")


@agent_app.command("agreement")
def agreement_cmd(domain: Annotated[str, typer.Option(help="mcp or terminal (state-checked suites).")] = "terminal",
                  split: Annotated[str, typer.Option(help="heldout or train.")] = "heldout",
                  world_model: Annotated[str, typer.Option("--world-model", help="The world model whose simulated "
                                                           "checker call is compared with the real one.")]
                  = DEFAULT_SPEC,
                  limit: Annotated[int | None, typer.Option(help="Only the first N tasks.")] = None,
                  out: Out = None) -> None:
    """How often the simulated checker call agrees with the real checker on the same real episodes: each task
    is run in the real environment by the expert (solves it) and by a policy that answers at once (does
    nothing); the world model then predicts the checker's output after each recorded episode."""
    from lwm.agent.agreement import AgreementRow, agreement
    from lwm.model_options import world_model as get_world_model

    chosen = [t for t in tasks(domain, split if split in ("train", "heldout") else None)
              if t.check.kind == "state"][:limit]
    if not chosen:
        raise fail(f"no state-checked {domain} {split} tasks", 2)
    wm = get_world_model(world_model)
    found = agreement(chosen, wm, out, console.status)
    rows = [r.model_dump() for r in found]
    table = Table(title=f"simulated vs real checker, {domain} {split}, world model {wm.backend.name}")
    for col in ("episodes by", "n", "real reward", "sim reward", "agree (both >= 0.5 or both < 0.5)"):
        table.add_column(col, justify="left" if col == "episodes by" else "right")
    for name in ("expert", "idle", "all"):
        items = [r for r in rows if name in ("all", r["policy"])]
        if items:
            table.add_row(name, str(len(items)), f"{mean(r['real'] for r in items):.2f}",
                          f"{mean(r['sim'] for r in items):.2f}", f"{mean(r['agree'] for r in items):.0%}")
    console.print(table)
    if out:
        JsonlFile(out / "agreement.jsonl", AgreementRow).write_all(found)


def register(app: typer.Typer) -> None:
    from lwm.cli.experiment import experiment_app

    agent_app.add_typer(experiment_app, name="experiment")
    app.add_typer(agent_app, name="agent")
