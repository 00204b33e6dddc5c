"""``lwm bench``: infer, judge, score, run (all three), compare, export."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from lwm.bench import pipeline
from lwm.bench.rows import Judgement
from lwm.bench.samples import BenchSample, export_trajectories, load_samples, spread, write_samples
from lwm.bench.summary import (
    compare_table,
    paired_differences,
    paired_table,
    score_table,
    side_by_side_table,
    skill_table,
)
from lwm.cli import options as o
from lwm.cli.common import fail
from lwm.data import read_trajectories
from lwm.data.jsonl import JsonlFile

bench_app = typer.Typer(help="AgentWorldBench-compatible benchmark.", no_args_is_help=True)
console = Console()

Out = Annotated[Path, typer.Option("--out", "--output-dir", help="Run folder (predictions.jsonl, judged.jsonl, "
                                   "scores.json).")]
Protocol = Annotated[Path | None, typer.Option(help="A checkout of QwenLM/Qwen-AgentWorld: send the published "
                                               "requests (its judge prompts and layout, read from there), with its "
                                               "sampling defaults. Without it the LLM judge is lwm's own.")]
JudgeBaseUrl = Annotated[str | None, typer.Option("--judge-base-url", help="The judge's OpenAI-compatible base URL "
                                                  "(default: the world model's --base-url).")]
JudgeApiKey = Annotated[str | None, typer.Option("--judge-api-key", help="The judge's API key (default: the world "
                                                 "model's --api-key, or OPENAI_API_KEY).")]
JudgeMaxTokens = Annotated[int | None, typer.Option(help="The judge's most answer tokens (default 4,096; the "
                                                    "protocol's with --protocol; less where its window is smaller).")]
JudgeTemperature = Annotated[float | None, typer.Option(help="The judge's temperature (default 0.6, or the "
                                                        "protocol's).")]
JudgeRetries = Annotated[int | None, typer.Option(help="Attempts at a parsable verdict (default 3, or the "
                                                  "protocol's).")]
Floor = Annotated[bool | None, typer.Option("--floor/--no-floor", help="With an LLM judge, also judge copy-last's "
                                                 "answers (turns 2+; at most as many judge calls again) so the report "
                                                 "shows skill over copy-last. Default on, off with --protocol (whose "
                                                 "script sends no such requests). The rule judge always shows it.")]
Executor = Annotated[str, typer.Option(help="local (this process) or ray (samples in shards over the Ray cluster "
                                       "RAY_ADDRESS names, each node with its own world model; docs/scaling.md).")]
Data = Annotated[Path, typer.Option(help="A folder of <domain>_test.jsonl files, or one file.")]
Concurrency = Annotated[int, typer.Option(help="Requests in flight.")]
Judge = Annotated[str, typer.Option("--judge", help="'rules' (no model) or a model spec for an LLM judge.")]
Limit = Annotated[int | None, typer.Option(help="Only the first N samples of each domain (a quick look).")]
ForceNew = Annotated[bool, typer.Option("--force-new", help="Start over in --out: the earlier run's files move to "
                                                            "OUT/previous-<time>/ (nothing is deleted).")]
BUDGET_HELP = ("Most tokens in one answer; 0 sizes it per domain from the data's real observations (95th "
               "percentile plus a quarter, at most half the model's window); with --protocol, 0 is the protocol's "
               "budget (32,768 in July 2026), less where the window leaves less.")
TEMPERATURE_HELP = "Sampling temperature (default 0 = greedy; the protocol's, 0.6, with --protocol)."
SEED_HELP = "Sampling seed (default 0; none is sent with --protocol, as the published script sends none)."
BENCH_OPTIONS = dict(exclude=("prompts_dir",), helps={"max_tokens": BUDGET_HELP, "temperature": TEMPERATURE_HELP,
                                                      "seed": SEED_HELP}, max_tokens=pipeline.AUTO, temperature=None,
                   seed=None)


PLAIN_EVERY = 30.0
"""Seconds between progress lines when the output is not a terminal."""


def _progress(label: str, total: int) -> tuple[Progress, Callable[[], None]]:
    """A bar whose rate and ETA are the whole stage's average so far (not the last seconds': samples finish
    in bursts under concurrency, and a short window swings the estimate by minutes)."""
    plain = not console.is_terminal  # piped or in CI: a bar would show only when done, so print lines instead
    progress = Progress(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        TextColumn("{task.fields[rate]}"), console=console, disable=plain)
    task = progress.add_task(label, total=total, rate="")
    last_line = [0.0]

    def tick() -> None:
        progress.advance(task)
        state = progress.tasks[0]
        if state.elapsed and state.completed:
            rate = state.completed / state.elapsed
            left = (state.total or 0) - state.completed
            progress.update(task, rate=f"{rate:.2f}/s, ETA {_clock(left / rate)}" if left else f"{rate:.2f}/s")
            if plain and (not left or state.elapsed - last_line[0] >= PLAIN_EVERY):
                last_line[0] = state.elapsed
                typer.echo(f"{label}: {state.completed:g}/{state.total:g} in {_clock(state.elapsed)}, "
                           f"{state.fields['rate']}")

    return progress, tick


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}"


class _Console:
    """The pipeline's reporter on the terminal: messages on stdout, warnings in yellow on stderr, a progress bar
    per stage (lines every 30 s when piped)."""

    @staticmethod
    def say(text: str) -> None:
        console.print(text)

    @staticmethod
    def warn(text: str) -> None:
        Console(stderr=True).print(f"[yellow]{text}[/]", highlight=False)

    @staticmethod
    @contextmanager
    def stage(label: str, total: int) -> Iterator[Callable[[], None]]:
        if not total:  # a resumed stage with nothing left: no empty 0/0 bar
            yield lambda: None
            return
        progress, tick = _progress(label, total)
        with progress:
            yield tick


REPORTER = _Console()


@contextmanager
def bench_errors() -> Iterator[None]:
    """The pipeline's errors as the CLI's: a user's mistake exits 2 with its message, Ctrl+C exits 130."""
    try:
        yield
    except pipeline.BenchError as exc:
        if exc.option:
            raise typer.BadParameter(str(exc)) from None
        raise fail(str(exc), 2) from None
    except pipeline.Interrupted as exc:
        typer.echo(f"lwm: {exc}", err=True)
        raise typer.Exit(130) from None


def show_scores(out: Path, samples: dict[str, BenchSample] | None, rows: list[dict[str, Any]] | None = None,
                report: bool = True) -> None:
    """Score, then print the tables (and where the report went)."""
    scores = pipeline.score(out, samples, rows, report)
    console.print(score_table(scores))
    if "skill_over_copy_last" in scores:
        console.print(skill_table(scores["skill_over_copy_last"]))
    if (scores.get("skill_over_copy_retrieved") or {}).get("domains"):
        console.print(skill_table(scores["skill_over_copy_retrieved"], "copy_retrieved"))
    console.print(f"judge protocol: {scores['judge_protocol']}")
    if "report" in scores:
        console.print(f"report: {scores['report']}")


@bench_app.command("infer")
@o.model_options(**BENCH_OPTIONS)
def infer_cmd(data: Data, out: Out, concurrency: Concurrency = 16, limit: Limit = None, protocol: Protocol = None,
              force_new: ForceNew = False, executor: Executor = "local", *, options: o.ModelOptions) -> None:
    """Predict the observation of every sample (resumes: finished samples are kept, if the model, sampling
    and data are the ones recorded in OUT/run.json)."""
    with bench_errors():
        pipeline.infer(data, out, options, limit=limit, concurrency=concurrency, force_new=force_new,
                       protocol=pipeline.read_protocol(protocol, REPORTER), reporter=REPORTER, executor=executor)


PredictionsFile = Annotated[Path | None, typer.Option("--predictions", help="A predictions file to judge (the "
                                                      "published script's predictions.jsonl, or lwm's) instead of "
                                                      "OUT's own.")]


@bench_app.command("judge")
def judge_cmd(out: Out, judge_spec: Judge = "rules", data: Annotated[Path | None, typer.Option(
              help="Benchmark data (default: the one infer used).")] = None, predictions_file: PredictionsFile = None,
              base_url: Annotated[str | None, typer.Option("--judge-base-url", help="The judge's "
                                                           "OpenAI-compatible base URL (as in bench run).")] = None,
              api_key: Annotated[str | None, typer.Option("--judge-api-key", help="The judge's API key "
                                                          "(or OPENAI_API_KEY).")] = None,
              judge_max_tokens: JudgeMaxTokens = None,
              judge_temperature: JudgeTemperature = None, judge_retries: JudgeRetries = None,
              concurrency: Concurrency = 16, prompts_dir: o.PromptsDir = None, protocol: Protocol = None,
              floor: Floor = None, force_new: ForceNew = False) -> None:
    """Score every prediction with rules or an LLM judge (resumes: judged samples are kept, if the judge is
    the one recorded; a sample predicted again since it was judged is judged again)."""
    with bench_errors():
        if predictions_file is not None:
            samples = pipeline.import_predictions(predictions_file, out, REPORTER)
        else:
            source = pipeline.recorded_data(out, data)
            if source is None:
                raise typer.BadParameter("no --data given and none recorded by infer in this run folder")
            samples = pipeline.read_samples(source, REPORTER)
        options = pipeline.JudgeOptions(judge_spec, base_url, api_key, judge_max_tokens, judge_temperature,
                                        judge_retries, prompts_dir, floor if floor is not None else protocol is None)
        pipeline.judge({s.key: s for s in samples}, out, options, concurrency=concurrency,
                       protocol=pipeline.read_protocol(protocol, REPORTER), force_new=force_new, reporter=REPORTER)


@bench_app.command("score")
def score_cmd(out: Annotated[Path | None, typer.Option("--out", "--output-dir", help="Run folder (judged.jsonl); "
                                                       "with --predictions, where scores.json goes.")] = None,
              predictions_file: Annotated[Path | None, typer.Option("--predictions", help="A judged file (the "
                                          "published script's judged.jsonl, or lwm's).")] = None,
              report: Annotated[bool, typer.Option(help="Also write report.html.")] = True) -> None:
    """Aggregate judged samples: the score table, scores.json and report.html."""
    if predictions_file is not None:
        if out is None:  # the judged file may be another tool's output: lwm writes only where it is told to
            raise fail("--predictions: give --out, the folder where scores.json (and report.html) go", 2)
        rows = [row.model_dump(exclude_none=True) for row in JsonlFile(predictions_file, Judgement).rows()]
        with bench_errors():
            show_scores(out, None, rows)
        return
    if out is None:
        raise typer.BadParameter("give --out (a run folder) or --predictions (a judged file)")
    source = pipeline.recorded_data(out)  # the samples give the floors' skill, with or without a report
    with bench_errors():
        show_scores(out, {s.key: s for s in load_samples(source)} if source else None, report=report)


@bench_app.command("run")
@o.model_options(**BENCH_OPTIONS)
def run_cmd(data: Data, out: Out, judge_spec: Judge = "rules", concurrency: Concurrency = 16,
            prompts_dir: o.PromptsDir = None, limit: Limit = None, protocol: Protocol = None,
            judge_base_url: JudgeBaseUrl = None, judge_api_key: JudgeApiKey = None,
            judge_max_tokens: JudgeMaxTokens = None, judge_temperature: JudgeTemperature = None,
            judge_retries: JudgeRetries = None, floor: Floor = None, force_new: ForceNew = False,
            executor: Executor = "local", *, options: o.ModelOptions) -> None:
    """infer, judge and score in one go (the data is read once; resumes as infer and judge do)."""
    with bench_errors():
        published = pipeline.read_protocol(protocol, REPORTER)
        by_key = {s.key: s for s in pipeline.infer(data, out, options, limit=limit, concurrency=concurrency,
                                                   force_new=force_new, protocol=published, reporter=REPORTER,
                                                   executor=executor)}
        judging = pipeline.JudgeOptions(judge_spec, judge_base_url or options.base_url,
                                        judge_api_key or options.api_key, judge_max_tokens, judge_temperature,
                                        judge_retries, prompts_dir, floor if floor is not None else protocol is None)
        pipeline.judge(by_key, out, judging, concurrency=concurrency, protocol=published, reporter=REPORTER)
        show_scores(out, by_key)


@bench_app.command("compare")
def compare_cmd(runs: Annotated[list[Path], typer.Argument(metavar="PATH",
                                                           help="Two or more scored run folders, baseline first.")]
                ) -> None:
    """Scored runs side by side per domain (e.g. base, +CPT, +SFT, +RL); with two, also every dimension's
    difference (second minus first); and the last run against the first sample by sample (won/tied/lost,
    mean difference and its standard error) where both have judged.jsonl."""
    if len(runs) < 2:
        raise typer.BadParameter("give at least two run folders")
    with bench_errors():
        compared = pipeline.compare(runs)
    if compared.note:
        console.print(compared.note)
    scores, judged = compared.scores, compared.judged
    if len(runs) == 2:
        console.print(compare_table(scores[0][1], scores[1][1], (scores[0][0], scores[1][0])))
    console.print(side_by_side_table(scores))
    first, last = judged[0], judged[-1]
    if first and last:
        console.print(paired_table(paired_differences(first, last), (runs[0].name, runs[-1].name)))


@bench_app.command("export")
def export_cmd(inputs: Annotated[list[Path], typer.Argument(metavar="PATH",
                                                            help="Trajectory collections or .jsonl files.")],
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
