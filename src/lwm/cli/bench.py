"""``lwm bench``: infer, judge, score, run (all three), compare, export."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from lwm.backends import BackendError, load_backend
from lwm.bench.data import BenchSample, export_trajectories, load_samples, spread, write_samples
from lwm.bench.report import write_report
from lwm.bench.run import JUDGED, PREDICTIONS, SCORES, judge, pending_inference, pending_judging, read_rows
from lwm.bench.run import infer as run_infer
from lwm.bench.score import aggregate, compare_table, paired_differences, paired_table, score_table, side_by_side_table
from lwm.cli import options as o
from lwm.data import read_trajectories

bench_app = typer.Typer(help="AgentWorldBench-compatible benchmark.", no_args_is_help=True)
console = Console()

Out = Annotated[Path, typer.Option(help="Run folder (predictions.jsonl, judged.jsonl, scores.json).")]
Data = Annotated[Path, typer.Option(help="A folder of <domain>_test.jsonl files, or one file.")]
Concurrency = Annotated[int, typer.Option(help="Requests in flight.")]
Judge = Annotated[str, typer.Option("--judge", help="'rules' (no model) or a model spec for an LLM judge.")]
Limit = Annotated[int | None, typer.Option(help="Only the first N samples of each domain (a quick look).")]


def _samples(data: Path, limit: int | None = None) -> list[BenchSample]:
    problems: list[str] = []
    try:
        samples = load_samples(data, problems)
        if limit is not None:
            seen: dict[str, int] = {}
            samples = [s for s in samples if (seen.__setitem__(s.domain, seen.get(s.domain, 0) + 1)
                                              or seen[s.domain] <= limit)]
    except FileNotFoundError as exc:
        raise typer.BadParameter(str(exc)) from None
    for problem in problems:
        console.print(f"[yellow]{problem}[/]", highlight=False)
    if problems:
        console.print(f"[yellow]{len(problems)} bad lines skipped[/]")
    return samples


def _progress(label: str, total: int) -> tuple[Progress, Callable[[], None]]:
    progress = Progress(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), console=console)
    task = progress.add_task(label, total=total, rate="")

    def tick() -> None:
        progress.advance(task)
        speed = progress.tasks[0].speed
        progress.update(task, rate=f"{speed:.1f}/s" if speed else "")

    return progress, tick


def _meta(out: Path, key: str, value: str | None = None) -> str | None:
    path = out / "run.json"
    meta = json.loads(path.read_text()) if path.exists() else {}
    if value is not None:
        meta[key] = value
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(meta, indent=2))
    return meta.get(key)


@bench_app.command("infer")
def infer_cmd(data: Data, out: Out, model: o.Model = o.DEFAULT_MODEL, base_url: o.BaseUrl = None,
              api_key: o.ApiKey = None, temperature: o.Temperature = 0.0, seed: o.Seed = 0,
              max_tokens: o.MaxTokens = 2048, concurrency: Concurrency = 16, no_cache: o.NoCache = False,
              limit: Limit = None) -> None:
    """Predict the observation of every sample (resumes: finished samples are kept)."""
    samples = _samples(data, limit)
    _meta(out, "data", str(data.resolve()))
    wm = o.make_world_model(model, base_url, api_key, temperature, seed, max_tokens, None, no_cache, concurrency)
    todo = len(pending_inference(samples, out))
    if todo < len(samples):
        console.print(f"resuming: {len(samples) - todo} samples already predicted in {out}")
    progress, tick = _progress("infer", todo)
    with progress:
        asyncio.run(run_infer(samples, wm, out, concurrency, tick))
    errors = sum(1 for r in read_rows(out / PREDICTIONS).values() if r.get("error"))
    console.print(f"predictions in {out / PREDICTIONS}" + (f"; {errors} failed (rerun to retry)" if errors else ""))


@bench_app.command("judge")
def judge_cmd(out: Out, judge_spec: Judge = "rules", data: Annotated[Path | None, typer.Option(
              help="Benchmark data (default: the one infer used).")] = None, base_url: o.BaseUrl = None,
              api_key: o.ApiKey = None, concurrency: Concurrency = 16, prompts_dir: o.PromptsDir = None) -> None:
    """Score every prediction with rules or an LLM judge (resumes: judged samples are kept)."""
    source = data or (Path(_meta(out, "data")) if _meta(out, "data") else None)
    if source is None:
        raise typer.BadParameter("no --data given and none recorded by infer in this run folder")
    samples = {s.id: s for s in _samples(source)}
    try:
        backend = None if judge_spec == "rules" else load_backend(judge_spec, base_url=base_url, api_key=api_key)
    except (BackendError, ValueError, KeyError) as exc:
        raise typer.BadParameter(str(exc)) from None
    progress, tick = _progress("judge", len(pending_judging(out)))
    with progress:
        asyncio.run(judge(samples, out, backend, concurrency, tick, prompts_dir))
    console.print(f"judgements in {out / JUDGED}")


@bench_app.command("score")
def score_cmd(out: Out, report: Annotated[bool, typer.Option(help="Also write report.html.")] = True) -> None:
    """Aggregate judged samples: the score table, scores.json and report.html."""
    rows = list(read_rows(out / JUDGED).values())
    if not rows:
        raise typer.BadParameter(f"nothing judged in {out}: run lwm bench judge first")
    scores = aggregate(rows)
    (out / SCORES).write_text(json.dumps(scores, indent=2))
    console.print(score_table(scores))
    if report and _meta(out, "data"):
        samples = {s.id: s for s in load_samples(Path(_meta(out, "data")))}
        path = write_report(out / "report.html", scores, rows, samples)
        console.print(f"report: {path}")


@bench_app.command("run")
def run_cmd(data: Data, out: Out, model: o.Model = o.DEFAULT_MODEL, judge_spec: Judge = "rules",
            base_url: o.BaseUrl = None, api_key: o.ApiKey = None, temperature: o.Temperature = 0.0,
            seed: o.Seed = 0, max_tokens: o.MaxTokens = 2048, concurrency: Concurrency = 16,
            no_cache: o.NoCache = False, prompts_dir: o.PromptsDir = None, limit: Limit = None) -> None:
    """infer, judge and score in one go."""
    infer_cmd(data, out, model, base_url, api_key, temperature, seed, max_tokens, concurrency, no_cache, limit)
    judge_cmd(out, judge_spec, data, base_url, api_key, concurrency, prompts_dir)
    score_cmd(out)


@bench_app.command("compare")
def compare_cmd(runs: Annotated[list[Path], typer.Argument(help="Two or more scored run folders, baseline first.")]
                ) -> None:
    """Scored runs side by side per domain (e.g. base, +CPT, +SFT, +RL); with two, also every dimension's
    difference (second minus first); and the last run against the first sample by sample (won/tied/lost,
    mean difference and its standard error) where both have judged.jsonl."""
    if len(runs) < 2:
        raise typer.BadParameter("give at least two run folders")
    missing = [str(p) for p in runs if not (p / SCORES).is_file()]
    if missing:
        raise typer.BadParameter(f"no {SCORES} in {', '.join(missing)}: run lwm bench score there first")
    scores = [(p.name, json.loads((p / SCORES).read_text())) for p in runs]
    if len(runs) == 2:
        console.print(compare_table(scores[0][1], scores[1][1], (scores[0][0], scores[1][0])))
    console.print(side_by_side_table(scores))
    first, last = read_rows(runs[0] / JUDGED), read_rows(runs[-1] / JUDGED)
    if first and last:
        console.print(paired_table(paired_differences(first, last), (runs[0].name, runs[-1].name)))


@bench_app.command("export")
def export_cmd(inputs: Annotated[list[Path], typer.Argument(help="Trajectory collections or .jsonl files.")],
               out: Annotated[Path, typer.Option(help="Folder for <domain>_test.jsonl files.")],
               compact: Annotated[bool, typer.Option(help="Compact system prompts (what small embedded models "
                                                          "get at inference).")] = False,
               per_domain: Annotated[int | None, typer.Option(help="Keep N samples per domain, evenly spread over "
                                                                   "its trajectories and turns.")] = None) -> None:
    """Turn lwm trajectories into AgentWorldBench samples (one per turn)."""
    samples = export_trajectories((t for p in inputs for t in read_trajectories(p)), compact)
    counts = write_samples(spread(samples, per_domain) if per_domain else samples, out)
    console.print(f"{sum(counts.values())} samples written to {out}: "
                  + ", ".join(f"{d} {n}" for d, n in sorted(counts.items())))


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")
