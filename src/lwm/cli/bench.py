"""``lwm bench``: infer, judge, score, run (all three), compare, export."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from lwm.backends import BackendError
from lwm.bench.baseline import copy_last_totals, skill_over
from lwm.bench.data import BenchSample, answer_budgets, export_trajectories, load_samples, spread, write_samples
from lwm.bench.protocol import ProtocolError, PublishedProtocol, load_protocol
from lwm.bench.report import write_report
from lwm.bench.rows import Judgement, Prediction
from lwm.bench.run import (
    JUDGED,
    PREDICTIONS,
    SCORES,
    judge,
    judgements,
    pending_inference,
    pending_judging,
    predictions,
)
from lwm.bench.run import infer as run_infer
from lwm.bench.score import (
    aggregate,
    compare_table,
    paired_differences,
    paired_table,
    score_table,
    side_by_side_table,
    skill_table,
)
from lwm.bench.scorer import Scorer, load_scorer
from lwm.cli import options as o
from lwm.cli.simulate import fail
from lwm.data import read_trajectories
from lwm.data.jsonl import JsonlFile
from lwm.runfolder import RUN_FILE, SettingsChanged, digest, finish, holds_rows, pin, read_run, set_aside, update_run
from lwm.worldmodel import WorldModel

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
Data = Annotated[Path, typer.Option(help="A folder of <domain>_test.jsonl files, or one file.")]
Concurrency = Annotated[int, typer.Option(help="Requests in flight.")]
Judge = Annotated[str, typer.Option("--judge", help="'rules' (no model) or a model spec for an LLM judge.")]
Limit = Annotated[int | None, typer.Option(help="Only the first N samples of each domain (a quick look).")]
ForceNew = Annotated[bool, typer.Option("--force-new", help="Start over in --out: the earlier run's files move to "
                                                            "OUT/previous-<time>/ (nothing is deleted).")]
REPORT = "report.html"
FLOOR = "copy-last"
"""Subfolder where an LLM judge's verdicts on copy-last's answers go (the floor the skill column reads)."""
AUTO = 0
BUDGET_HELP = ("Most tokens in one answer; 0 sizes it per domain from the data's real observations (95th "
               "percentile plus a quarter, at most half the model's window); with --protocol, 0 is the protocol's "
               "budget (32,768 in July 2026), less where the window leaves less.")
TEMPERATURE_HELP = "Sampling temperature (default 0 = greedy; the protocol's, 0.6, with --protocol)."
SEED_HELP = "Sampling seed (default 0; none is sent with --protocol, as the published script sends none)."
BENCH_OPTIONS = dict(exclude=("prompts_dir",), helps={"max_tokens": BUDGET_HELP, "temperature": TEMPERATURE_HELP,
                                                      "seed": SEED_HELP}, max_tokens=AUTO, temperature=None, seed=None)


def _samples(data: Path) -> list[BenchSample]:
    problems: list[str] = []
    try:
        samples = load_samples(data, problems)
    except FileNotFoundError as exc:
        raise typer.BadParameter(str(exc)) from None
    warn = Console(stderr=True)
    for problem in problems:
        warn.print(f"[yellow]{problem}[/]", highlight=False)
    if not samples:
        raise fail(f"no benchmark samples in {data}" + (f" ({len(problems)} problems, above)" if problems else "")
                   + ": expected <domain>_test.jsonl rows (lwm bench export makes them)", 2)
    return samples


def _protocol(path: Path | None) -> PublishedProtocol | None:
    if path is None:
        return None
    try:
        protocol = load_protocol(path)
    except ProtocolError as exc:
        raise fail(str(exc), 2) from None
    console.print(f"protocol: the published AgentWorldBench requests, read from {protocol.root} "
                  f"(revision {protocol.revision[:12]})")
    return protocol


def _first(samples: list[BenchSample], limit: int | None) -> list[BenchSample]:
    """The first ``limit`` samples of each domain (all with None)."""
    if limit is None:
        return samples
    seen: Counter[str] = Counter()
    chosen = []
    for sample in samples:
        seen[sample.domain] += 1
        if seen[sample.domain] <= limit:
            chosen.append(sample)
    return chosen


PLAIN_EVERY = 30.0
"""Seconds between progress lines when the output is not a terminal."""


def _progress(label: str, total: int) -> tuple[Progress, Callable[[], None]]:
    """A bar whose rate and ETA are the whole stage's average so far (not the last seconds': samples finish
    in bursts under concurrency, and a short window swings the estimate by minutes)."""
    progress = Progress(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        TextColumn("{task.fields[rate]}"), console=console)
    task = progress.add_task(label, total=total, rate="")
    plain = not console.is_terminal  # piped or in CI: a bar would show only when done, so print lines
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


def _start(out: Path, stage: str, settings: dict[str, Any], rows: Path, force_new: bool, files: list[str]) -> None:
    """Pin this stage's settings in the run folder: a resume with other settings is refused (or, with
    --force-new, the earlier run is set aside)."""
    if force_new and (moved := set_aside(out, files)):
        console.print(f"earlier run moved to {moved}")
    try:
        pin(out, stage, settings, has_rows=holds_rows(rows),
            way_out="use --force-new to set them aside, or a new --out")
    except SettingsChanged as exc:
        raise fail(str(exc), 2) from None


def _run_stage(out: Path, stage: str, rows: Path, total: int, work: Callable[[Callable[[], None]], Any]) -> None:
    """Run a stage's coroutine under a progress bar; Ctrl+C says what was kept and exits 130."""
    progress, tick = _progress(stage, total)
    try:
        with progress:
            asyncio.run(work(tick))
    except KeyboardInterrupt:
        kept = sum(1 for line in rows.open(encoding="utf-8") if line.strip()) if rows.is_file() else 0
        noun = {"infer": "prediction", "judge": "judgement"}[stage]
        typer.echo(f"lwm: interrupted: {kept} {noun} rows kept in {rows}; the same command resumes", err=True)
        raise typer.Exit(130) from None
    finish(out, stage)


def _sampling(options: o.ModelOptions, protocol: PublishedProtocol | None) -> o.ModelOptions:
    """The options with unset sampling filled in: lwm's defaults (greedy, seed 0, per-domain budgets), or with
    a protocol its script's (its temperature and budget, no seed, and none of a packaged model's own edit
    guidance and retrieved examples: the script's requests as they are)."""
    published = protocol.defaults.get("infer", {}) if protocol else {}
    if protocol:
        options = replace(options, edits=False, no_retrieve=True)
    return replace(options,
                   temperature=options.temperature if options.temperature is not None
                   else float(published.get("temperature", 0.0)),
                   seed=options.seed if options.seed is not None or protocol else 0,
                   max_tokens=options.max_tokens or int(published.get("max_tokens", AUTO)))


def _infer(data: Path, limit: int | None, out: Path, options: o.ModelOptions, concurrency: int,
           force_new: bool, protocol: PublishedProtocol | None) -> list[BenchSample]:
    """Predict the first ``limit`` samples of each domain (all with None) and return them; answer budgets
    are sized on the whole data, so that --limit does not change them."""
    if protocol and (options.edits or options.retrieve):
        raise fail("--protocol sends the published script's requests as they are: --edits and --retrieve add to "
                   "them, so they are not used with it", 2)
    every = _samples(data)
    samples = _first(every, limit)
    options = _sampling(options, protocol)
    wm = options.world_model(concurrency)
    budgets = answer_budgets(every, wm.backend.context_window) if options.max_tokens == AUTO else None
    if budgets:
        console.print("answer budget per domain (tokens, from the data's real observations; --max-tokens N sets "
                      "one): " + ", ".join(f"{d} {n}" for d, n in sorted(budgets.items())))
    _start(out, "infer", {"model": wm.backend.name, "base_url": options.base_url, "temperature": options.temperature,
                          "seed": options.seed, "max_tokens": budgets or options.max_tokens, "data": digest(data),
                          "protocol": protocol.revision if protocol else None, "guard": options.guard or None,
                          "edits": wm.edits or None, "examples": options.examples if wm.retriever else None,
                          "retrieve": wm.retriever.inputs if wm.retriever else None},
           out / PREDICTIONS, force_new, [PREDICTIONS, JUDGED, SCORES, REPORT, RUN_FILE])
    update_run(out, data=str(data.resolve()))
    todo = len(pending_inference(samples, out))
    if todo < len(samples):
        console.print(f"resuming: {len(samples) - todo} samples already predicted in {out}")
    _run_stage(out, "infer", out / PREDICTIONS, todo,
               lambda tick: run_infer(samples, wm, out, concurrency, tick, budgets=budgets, protocol=protocol))
    rows = predictions(out).by_id().values()
    errors, never = sum(1 for r in rows if not r.ok and not r.never_fits), sum(1 for r in rows if r.never_fits)
    console.print(f"predictions in {out / PREDICTIONS}" + (f"; {errors} failed (rerun to retry)" if errors else "")
                  + (f"; {never} can never fit the model's window at these settings (not retried; a compact "
                     "export, a model with a larger window or a smaller --max-tokens would)" if never else ""))
    return samples


@dataclass(frozen=True)
class JudgeOptions:
    """How the judge is reached and samples; unset numbers come from the protocol, else lwm's defaults."""

    spec: str = "rules"
    base_url: str | None = None
    api_key: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    retries: int | None = None
    prompts_dir: Path | None = None
    floor: bool = True
    """LLM judges: also judge copy-last's answers (turns 2+), for the skill column."""

    def scorer(self, protocol: PublishedProtocol | None) -> tuple[Scorer, dict[str, Any]]:
        """The scorer and the settings a resume must match."""
        if self.spec == "rules":
            scorer = load_scorer("rules")
            return scorer, {"judge": "rules", "rules_version": scorer.version}  # type: ignore[attr-defined]
        published = protocol.defaults.get("judge", {}) if protocol else {}
        settings = {"max_tokens": self.max_tokens or int(published.get("max_tokens", 4096)),
                    "temperature": self.temperature if self.temperature is not None
                    else float(published.get("temperature", 0.6)),
                    "retries": self.retries or int(published.get("max_retries", 3))}
        scorer = load_scorer(self.spec, prompts_dir=self.prompts_dir, base_url=self.base_url, api_key=self.api_key,
                             protocol=protocol, **settings)
        return scorer, {"judge": scorer.name, "base_url": self.base_url, **settings,
                        "prompts": digest(self.prompts_dir) if self.prompts_dir else None,
                        "protocol": protocol.revision if protocol else None}


def _judge(samples: dict[str, BenchSample], out: Path, options: JudgeOptions, concurrency: int,
           protocol: PublishedProtocol | None, force_new: bool = False) -> None:
    try:
        scorer, settings = options.scorer(protocol)
    except (BackendError, ValueError, KeyError) as exc:
        raise typer.BadParameter(str(exc)) from None
    _start(out, "judge", settings, out / JUDGED, force_new, [JUDGED, SCORES, REPORT])
    _run_stage(out, "judge", out / JUDGED, len(pending_judging(out)),
               lambda tick: judge(samples, out, scorer, concurrency, tick))
    console.print(f"judgements in {out / JUDGED}")
    if options.spec != "rules" and options.floor:
        _judge_floor(samples, out / FLOOR, scorer, settings, concurrency, force_new)


def _judge_floor(samples: dict[str, BenchSample], floor: Path, scorer: Scorer, settings: dict[str, Any],
                 concurrency: int, force_new: bool) -> None:
    """An LLM judge's floor: copy-last's answers to the same samples past their first turn, judged by the same
    judge in a run folder of their own (resumable like any run), so the report can say what the model adds
    over repeating the previous observation. The rule judge needs none of this (its floor costs nothing)."""
    chosen = {key: s for key, s in samples.items() if s.turn_idx > 1 and s.history}
    if not chosen:
        return
    files = [PREDICTIONS, JUDGED, SCORES, REPORT, RUN_FILE]
    _start(floor, "infer", {"model": "copy-last"}, floor / PREDICTIONS, force_new, files)
    asyncio.run(run_infer(list(chosen.values()), WorldModel("copy-last", cache=False), floor, concurrency))
    _start(floor, "judge", settings, floor / JUDGED, force_new, [JUDGED])
    console.print(f"judging copy-last's answers to the {len(chosen)} samples past their first turn, in {floor} "
                  "(the floor for skill over copy-last; --no-floor skips it)")
    _run_stage(floor, "judge", floor / JUDGED, len(pending_judging(floor)),
               lambda tick: judge(chosen, floor, scorer, concurrency, tick))


def judge_protocol(run: dict[str, Any]) -> str:
    """What the numbers of a run are comparable to, from the judge settings it recorded."""
    settings = run.get("judge") or {}
    if settings.get("judge") == "rules":
        return "lwm's rule metrics (no judge model): comparable to other lwm rule-judged runs, not to published numbers"
    if settings.get("protocol"):
        return f"the published AgentWorldBench judge protocol (Qwen-AgentWorld {settings['protocol'][:12]})"
    return ("lwm's own judge prompts and layout (no --protocol): not comparable to published AgentWorldBench "
            "numbers")


def _score(out: Path, samples: dict[str, BenchSample] | None, rows: list[dict[str, Any]] | None = None) -> None:
    rows = rows if rows is not None else list(_judged_rows(out).values())
    if not rows:
        raise typer.BadParameter(f"nothing judged in {out}: run lwm bench judge first")
    run = read_run(out)
    scores = {**aggregate(rows), "judge_protocol": judge_protocol(run) if run else "unknown (a judged file given "
              "by --predictions)", "run": run}
    if samples is not None and (run.get("judge") or {}).get("judge") == "rules":
        scores["skill_over_copy_last"] = skill_over(rows, copy_last_totals(samples))
    elif _same_judge(run, read_run(out / FLOOR)) and (floor := {
            key: row["total_score"] for key, row in _judged_rows(out / FLOOR).items()
            if row.get("total_score") and not row.get("failed")}):
        scores["skill_over_copy_last"] = skill_over(rows, floor)
    out.mkdir(parents=True, exist_ok=True)
    (out / SCORES).write_text(json.dumps(scores, indent=2))
    console.print(score_table(scores))
    if "skill_over_copy_last" in scores:
        console.print(skill_table(scores["skill_over_copy_last"]))
    console.print(f"judge protocol: {scores['judge_protocol']}")
    if samples is not None:
        console.print(f"report: {write_report(out / REPORT, scores, rows, samples)}")


def _same_judge(run: dict[str, Any], floor_run: dict[str, Any]) -> bool:
    """Whether copy-last's answers were judged with the run's judge settings (a re-judged run's floor from an
    earlier judge is not its floor)."""
    def settings(r: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in (r.get("judge") or {}).items() if k not in ("lwm", "started", "finished")}
    return bool(settings(floor_run)) and settings(floor_run) == settings(run)


def _recorded_data(out: Path, data: Path | None) -> Path | None:
    return data or (Path(recorded) if (recorded := read_run(out).get("data")) else None)


def _judged_rows(out: Path) -> dict[str, dict]:
    return {i: row.model_dump(exclude_none=True) for i, row in judgements(out).by_id().items()}


@bench_app.command("infer")
@o.model_options(**BENCH_OPTIONS)
def infer_cmd(data: Data, out: Out, concurrency: Concurrency = 16, limit: Limit = None, protocol: Protocol = None,
              force_new: ForceNew = False, *, options: o.ModelOptions) -> None:
    """Predict the observation of every sample (resumes: finished samples are kept, if the model, sampling
    and data are the ones recorded in OUT/run.json)."""
    _infer(data, limit, out, options, concurrency, force_new, _protocol(protocol))


PredictionsFile = Annotated[Path | None, typer.Option("--predictions", help="A predictions file to judge (the "
                                                      "published script's predictions.jsonl, or lwm's) instead of "
                                                      "OUT's own.")]


@bench_app.command("judge")
def judge_cmd(out: Out, judge_spec: Judge = "rules", data: Annotated[Path | None, typer.Option(
              help="Benchmark data (default: the one infer used).")] = None, predictions_file: PredictionsFile = None,
              base_url: Annotated[str | None, typer.Option("--judge-base-url", "--base-url", help="The judge's "
                                                           "OpenAI-compatible base URL.")] = None,
              api_key: Annotated[str | None, typer.Option("--judge-api-key", "--api-key", help="The judge's API key "
                                                          "(or OPENAI_API_KEY).")] = None,
              judge_max_tokens: JudgeMaxTokens = None,
              judge_temperature: JudgeTemperature = None, judge_retries: JudgeRetries = None,
              concurrency: Concurrency = 16, prompts_dir: o.PromptsDir = None, protocol: Protocol = None,
              floor: Floor = None, force_new: ForceNew = False) -> None:
    """Score every prediction with rules or an LLM judge (resumes: judged samples are kept, if the judge is
    the one recorded; a sample predicted again since it was judged is judged again)."""
    if predictions_file is not None:
        samples = _samples(predictions_file)  # a predictions row is its sample plus gen
        if predictions_file.resolve() != (out / PREDICTIONS).resolve():
            predictions(out).write_all(Prediction.model_validate(s.model_dump(exclude_none=True)) for s in samples)
    else:
        source = _recorded_data(out, data)
        if source is None:
            raise typer.BadParameter("no --data given and none recorded by infer in this run folder")
        samples = _samples(source)
    options = JudgeOptions(judge_spec, base_url, api_key, judge_max_tokens, judge_temperature, judge_retries,
                           prompts_dir, floor if floor is not None else protocol is None)
    _judge({s.key: s for s in samples}, out, options, concurrency, _protocol(protocol), force_new)


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
        _score(out, None, rows)
        return
    if out is None:
        raise typer.BadParameter("give --out (a run folder) or --predictions (a judged file)")
    source = _recorded_data(out, None) if report else None
    _score(out, {s.key: s for s in load_samples(source)} if source else None)


@bench_app.command("run")
@o.model_options(**BENCH_OPTIONS)
def run_cmd(data: Data, out: Out, judge_spec: Judge = "rules", concurrency: Concurrency = 16,
            prompts_dir: o.PromptsDir = None, limit: Limit = None, protocol: Protocol = None,
            judge_base_url: JudgeBaseUrl = None, judge_api_key: JudgeApiKey = None,
            judge_max_tokens: JudgeMaxTokens = None, judge_temperature: JudgeTemperature = None,
            judge_retries: JudgeRetries = None, floor: Floor = None, force_new: ForceNew = False, *,
            options: o.ModelOptions) -> None:
    """infer, judge and score in one go (the data is read once; resumes as infer and judge do)."""
    published = _protocol(protocol)
    by_key = {s.key: s for s in _infer(data, limit, out, options, concurrency, force_new, published)}
    judging = JudgeOptions(judge_spec, judge_base_url or options.base_url, judge_api_key or options.api_key,
                           judge_max_tokens, judge_temperature, judge_retries, prompts_dir,
                           floor if floor is not None else protocol is None)
    _judge(by_key, out, judging, concurrency, published)
    _score(out, by_key)


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
    judged = [_judged_rows(p) for p in runs]
    if all(judged):  # scores of the samples every run has, so that no difference is one of sample sets
        shared = set.intersection(*(set(rows) for rows in judged))
        counts = ", ".join(f"{p.name} has {len(r)}" for p, r in zip(runs, judged, strict=True))
        if not shared:
            raise fail(f"the runs share no samples ({counts}): nothing to compare", 2)
        if any(len(rows) != len(shared) for rows in judged):
            console.print(f"comparing on the {len(shared)} samples every run has ({counts})")
            scores = [(p.name, aggregate([row for key, row in rows.items() if key in shared]))
                      for p, rows in zip(runs, judged, strict=True)]
            judged = [{key: row for key, row in rows.items() if key in shared} for rows in judged]
    if len(runs) == 2:
        console.print(compare_table(scores[0][1], scores[1][1], (scores[0][0], scores[1][0])))
    console.print(side_by_side_table(scores))
    first, last = judged[0], judged[-1]
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
