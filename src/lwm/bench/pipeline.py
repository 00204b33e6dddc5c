"""The benchmark as a Python API: ``infer``, ``judge``, ``score`` over a run folder (``lwm bench`` only parses
options, shows progress and prints what these return). Each stage pins its settings in the run folder's
run.json and resumes: finished rows are kept when the settings are the ones recorded.

```python
from lwm.bench.pipeline import JudgeOptions, infer, judge, score
from lwm.model_options import ModelOptions, world_model

samples = infer("data/bench-sample", "runs/b", ModelOptions("embedded:lwm-mini", max_tokens=256))
judge({s.key: s for s in samples}, "runs/b", JudgeOptions("rules"))
scores = score("runs/b", {s.key: s for s in samples})
```
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from lwm.backends import BackendError
from lwm.bench.baseline import copy_last_totals, copy_retrieved_totals, skill_over
from lwm.bench.protocol import ProtocolError, PublishedProtocol, load_protocol
from lwm.bench.report import write_report
from lwm.bench.rows import Judgement, Prediction
from lwm.bench.run import JUDGED, PREDICTIONS, SCORES, judgements, pending_inference, pending_judging, predictions
from lwm.bench.run import infer as run_infer
from lwm.bench.run import judge as run_judge
from lwm.bench.samples import BenchSample, answer_budgets, load_samples
from lwm.bench.scorer import Scorer, load_scorer
from lwm.bench.summary import aggregate
from lwm.data.jsonl import JsonlFile
from lwm.model_options import ModelOptions, world_model
from lwm.runfolder import RUN_FILE, SettingsChanged, digest, finish, holds_rows, pin, read_run, set_aside, update_run

REPORT = "report.html"
FLOOR = "copy-last"
"""Subfolder where an LLM judge's verdicts on copy-last's answers go (the floor the skill column reads)."""
AUTO = 0
"""``max_tokens`` 0: each domain's answer budget sized from the data's real observations."""


class BenchError(Exception):
    """Something the user must change (no samples, other settings than the run's, a bad judge spec); the CLI
    exits 2 with it. ``option`` is set where one option is at fault."""

    def __init__(self, message: str, option: bool = False):
        super().__init__(message)
        self.option = option


class Interrupted(KeyboardInterrupt):
    """A stage stopped by Ctrl+C; its finished rows are kept and the same call resumes."""


class Reporter(Protocol):
    """Where a stage's messages and progress go (the CLI: rich; Python callers: nowhere by default)."""

    def say(self, text: str) -> None: ...
    def warn(self, text: str) -> None: ...
    def stage(self, label: str, total: int) -> Any:
        """A context manager yielding ``tick()``, called once per finished row."""


class Quiet:
    def say(self, text: str) -> None:
        pass

    def warn(self, text: str) -> None:
        pass

    @contextmanager
    def stage(self, label: str, total: int) -> Iterator[Callable[[], None]]:
        yield lambda: None


QUIET = Quiet()


SHOWN_PROBLEMS = 5
"""Unreadable lines named one by one; the rest are counted (a trajectory file given as data made 74 lines)."""


def read_samples(data: Path, reporter: Reporter = QUIET) -> list[BenchSample]:
    """Every sample of a data folder or file; unreadable lines are reported and passed over."""
    problems: list[str] = []
    try:
        samples = load_samples(data, problems)
    except FileNotFoundError as exc:
        raise BenchError(str(exc), option=True) from None
    for problem in problems[:SHOWN_PROBLEMS]:
        reporter.warn(problem)
    if len(problems) > SHOWN_PROBLEMS:
        reporter.warn(f"... and {len(problems) - SHOWN_PROBLEMS} more like these")
    if not samples:
        raise BenchError(f"no benchmark samples in {data}" + (f" ({len(problems)} problems, above)" if problems
                         else "") + ": expected <domain>_test.jsonl rows (lwm bench export makes them)")
    return samples


def import_predictions(file: Path, out: Path, reporter: Reporter = QUIET) -> list[BenchSample]:
    """Another tool's predictions file (the published script's, or lwm's) as ``out``'s own, to be judged there;
    returns its samples (a predictions row is its sample plus the answer)."""
    samples = read_samples(file, reporter)
    if file.resolve() != (out / PREDICTIONS).resolve():
        predictions(out).write_all(Prediction.model_validate(s.model_dump(exclude_none=True)) for s in samples)
    return samples


def read_protocol(path: Path | None, reporter: Reporter = QUIET) -> PublishedProtocol | None:
    """The published script's requests from a checkout of QwenLM/Qwen-AgentWorld (None without one)."""
    if path is None:
        return None
    try:
        protocol = load_protocol(path)
    except ProtocolError as exc:
        raise BenchError(str(exc)) from None
    reporter.say(f"protocol: the published AgentWorldBench requests, read from {protocol.root} "
                 f"(revision {protocol.revision[:12]})")
    return protocol


def first(samples: list[BenchSample], limit: int | None) -> list[BenchSample]:
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


def _start(out: Path, stage: str, settings: dict[str, Any], rows: Path, force_new: bool, files: list[str],
           reporter: Reporter) -> None:
    """Pin this stage's settings in the run folder: a resume with other settings is refused (or, with
    ``force_new``, the earlier run is set aside)."""
    if force_new and (moved := set_aside(out, files)):
        reporter.say(f"earlier run moved to {moved}")
    try:
        pin(out, stage, settings, has_rows=holds_rows(rows),
            way_out="use --force-new to set them aside, or a new --out")
    except SettingsChanged as exc:
        raise BenchError(str(exc)) from None


def _run_stage(out: Path, stage: str, rows: Path, total: int, work: Callable[[Callable[[], None]], Any],
               reporter: Reporter) -> None:
    """Run a stage's coroutine with progress; Ctrl+C raises ``Interrupted`` saying what was kept."""
    try:
        with reporter.stage(stage, total) as tick:
            asyncio.run(work(tick))
    except KeyboardInterrupt:
        kept = sum(1 for line in rows.open(encoding="utf-8") if line.strip()) if rows.is_file() else 0
        noun = {"infer": "prediction", "judge": "judgement"}[stage]
        raise Interrupted(f"interrupted: {kept} {noun} rows kept in {rows}; the same command resumes") from None
    finish(out, stage)


def sampling(options: ModelOptions, protocol: PublishedProtocol | None) -> ModelOptions:
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


def infer(data: str | Path, out: str | Path, options: ModelOptions, *, limit: int | None = None,
          concurrency: int = 16, force_new: bool = False, protocol: PublishedProtocol | None = None,
          reporter: Reporter = QUIET, executor: str = "local") -> list[BenchSample]:
    """Predict the first ``limit`` samples of each domain (all with None) into ``out`` and return them; answer
    budgets are sized on the whole data, so that ``limit`` does not change them. ``executor="ray"`` spreads the
    samples over a Ray cluster (``lwm.bench.cluster``), each node predicting with its own world model."""
    if executor not in ("local", "ray"):
        raise BenchError(f"--executor must be local or ray, not {executor!r}", option=True)
    data, out = Path(data), Path(out)
    if protocol and (options.edits or options.retrieve):
        raise BenchError("--protocol sends the published script's requests as they are: --edits and --retrieve "
                         "add to them, so they are not used with it")
    every = read_samples(data, reporter)
    samples = first(every, limit)
    options = sampling(options, protocol)
    try:
        wm = world_model(options, concurrency=concurrency)
    except (ValueError, BackendError) as exc:  # a bad spec or a model that is not there: the user's to change
        raise BenchError(str(exc), option=True) from None
    budgets = answer_budgets(every, wm.backend.context_window) if options.max_tokens == AUTO else None
    if budgets:
        reporter.say("answer budget per domain (tokens, from the data's real observations; --max-tokens N sets "
                     "one): " + ", ".join(f"{d} {n}" for d, n in sorted(budgets.items())))
    _start(out, "infer", {"model": wm.backend.name, "base_url": options.base_url, "temperature": options.temperature,
                          "seed": options.seed, "max_tokens": budgets or options.max_tokens, "data": digest(data),
                          "protocol": protocol.revision if protocol else None, "guard": options.guard or None,
                          "edits": wm.edits or None, "examples": options.examples if wm.retriever else None,
                          "examples_when": wm.examples_when if wm.retriever else None,
                          "retrieve": wm.retriever.inputs if wm.retriever else None},
           out / PREDICTIONS, force_new, [PREDICTIONS, JUDGED, SCORES, REPORT, RUN_FILE], reporter)
    # not pinned (a resume need not match them): what --limit and the retrieved transitions' digests stand for
    update_run(out, data=str(data.resolve()), limit=limit,
               retrieve_from=[str(p) for p in options.retrieve] if options.retrieve else
               "the model's own transitions" if wm.retriever else None)
    todo = len(pending_inference(samples, out))
    if todo < len(samples):
        reporter.say(f"resuming: {len(samples) - todo} samples already predicted in {out}")
    if executor == "ray":
        from lwm.bench.cluster import infer_on_cluster

        _run_stage(out, "infer", out / PREDICTIONS, todo, lambda tick: infer_on_cluster(
            samples, options, out, concurrency, tick, budgets=budgets, protocol=protocol), reporter)
    else:
        _run_stage(out, "infer", out / PREDICTIONS, todo,
                   lambda tick: run_infer(samples, wm, out, concurrency, tick, budgets=budgets, protocol=protocol),
                   reporter)
    rows = predictions(out).by_id().values()
    errors, never = sum(1 for r in rows if not r.ok and not r.never_fits), sum(1 for r in rows if r.never_fits)
    reporter.say(f"predictions in {out / PREDICTIONS}" + (f"; {errors} failed (rerun to retry)" if errors else "")
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


def judge(samples: dict[str, BenchSample], out: str | Path, options: JudgeOptions, *, concurrency: int = 16,
          protocol: PublishedProtocol | None = None, force_new: bool = False, reporter: Reporter = QUIET) -> None:
    """Judge every prediction in ``out`` (and, for an LLM judge with ``options.floor``, copy-last's answers)."""
    out = Path(out)
    try:
        scorer, settings = options.scorer(protocol)
    except (BackendError, ValueError, KeyError) as exc:
        raise BenchError(str(exc), option=True) from None
    _start(out, "judge", settings, out / JUDGED, force_new, [JUDGED, SCORES, REPORT], reporter)
    _run_stage(out, "judge", out / JUDGED, len(pending_judging(out)),
               lambda tick: run_judge(samples, out, scorer, concurrency, tick), reporter)
    reporter.say(f"judgements in {out / JUDGED}")
    if options.spec != "rules" and options.floor:
        _judge_floor(samples, out / FLOOR, scorer, settings, concurrency, force_new, reporter)


def _judge_floor(samples: dict[str, BenchSample], floor: Path, scorer: Scorer, settings: dict[str, Any],
                 concurrency: int, force_new: bool, reporter: Reporter) -> None:
    """An LLM judge's floor: copy-last's answers to the same samples past their first turn, judged by the same
    judge in a run folder of their own (resumable like any run), so the report can say what the model adds
    over repeating the previous observation. The rule judge needs none of this (its floor costs nothing)."""
    chosen = {key: s for key, s in samples.items() if s.turn_idx > 1 and s.history}
    if not chosen:
        return
    files = [PREDICTIONS, JUDGED, SCORES, REPORT, RUN_FILE]
    _start(floor, "infer", {"model": "copy-last"}, floor / PREDICTIONS, force_new, files, reporter)
    asyncio.run(run_infer(list(chosen.values()), world_model("copy-last", no_cache=True), floor, concurrency))
    _start(floor, "judge", settings, floor / JUDGED, force_new, [JUDGED], reporter)
    reporter.say(f"judging copy-last's answers to the {len(chosen)} samples past their first turn, in {floor} "
                 "(the floor for skill over copy-last; --no-floor skips it)")
    _run_stage(floor, "judge", floor / JUDGED, len(pending_judging(floor)),
               lambda tick: run_judge(chosen, floor, scorer, concurrency, tick), reporter)


def judge_protocol(run: dict[str, Any]) -> str:
    """What the numbers of a run are comparable to, from the judge settings it recorded."""
    settings = run.get("judge") or {}
    if settings.get("judge") == "rules":
        return "lwm's rule metrics (no judge model): comparable to other lwm rule-judged runs, not to published numbers"
    if settings.get("protocol"):
        return f"the published AgentWorldBench judge protocol (Qwen-AgentWorld {settings['protocol'][:12]})"
    return ("lwm's own judge prompts and layout (no --protocol): not comparable to published AgentWorldBench "
            "numbers")


def score(out: str | Path, samples: dict[str, BenchSample] | None, rows: list[dict[str, Any]] | None = None,
          report: bool = True) -> dict[str, Any]:
    """The published aggregation of the judged rows (``out``'s own unless given), with skill over copy-last
    where a floor exists; written to ``out``/scores.json, and to report.html when ``samples`` are given and
    ``report`` (then ``scores["report"]`` is its path)."""
    out = Path(out)
    # a rerun with --limit scores the samples it was asked for, not every row an earlier run left in ``out``
    rows = rows if rows is not None else [row for key, row in judged_rows(out).items()
                                          if samples is None or key in samples]
    if not rows:
        raise BenchError(f"nothing judged in {out}: run lwm bench judge first", option=True)
    run = read_run(out)
    scores = {**aggregate(rows), "judge_protocol": judge_protocol(run) if run else "unknown (a judged file given "
              "by --predictions)", "run": run}
    if samples is not None and (run.get("judge") or {}).get("judge") == "rules":
        scores["skill_over_copy_last"] = skill_over(rows, copy_last_totals(samples))
        scores["skill_over_copy_retrieved"] = skill_over(rows, copy_retrieved_totals(samples), "copy_retrieved")
    elif _same_judge(run, read_run(out / FLOOR)) and (floor := {
            key: row["total_score"] for key, row in judged_rows(out / FLOOR).items()
            if row.get("total_score") and not row.get("failed")}):
        scores["skill_over_copy_last"] = skill_over(rows, floor)
    out.mkdir(parents=True, exist_ok=True)
    (out / SCORES).write_text(json.dumps(scores, indent=2))
    if samples is not None and report:
        model = (run.get("infer") or {}).get("model")
        title = f"lwm benchmark: {model}" + (f" (first {run['limit']} samples per domain)" if run.get("limit") else "")
        return {**scores, "report": str(write_report(out / REPORT, scores, rows, samples, title=title))}
    return scores


def _same_judge(run: dict[str, Any], floor_run: dict[str, Any]) -> bool:
    """Whether copy-last's answers were judged with the run's judge settings (a re-judged run's floor from an
    earlier judge is not its floor)."""
    def settings(r: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in (r.get("judge") or {}).items() if k not in ("lwm", "started", "finished")}
    return bool(settings(floor_run)) and settings(floor_run) == settings(run)


def recorded_data(out: Path, data: Path | None = None) -> Path | None:
    """``data`` if given, else the data the run folder's inference recorded."""
    return data or (Path(recorded) if (recorded := read_run(out).get("data")) else None)


def judged_rows(out: Path) -> dict[str, dict]:
    """A run folder's judged rows by sample key; a run kept in git holds them as ``judged.jsonl.xz`` (the
    file is 25x smaller compressed, and a comparison only reads it)."""
    file = judgements(out)
    if not file.path.exists() and (kept := file.path.with_name(JUDGED + ".xz")).is_file():
        file = JsonlFile(kept, Judgement, exclude_none=True)
    return {i: row.model_dump(exclude_none=True) for i, row in file.by_id().items()}


@dataclass
class Comparison:
    """Scored runs made comparable: each run's scores and judged rows over the samples every run has."""

    scores: list[tuple[str, dict[str, Any]]]
    judged: list[dict[str, dict]]
    note: str | None = None
    """Said when the runs' sample sets differ (the scores are then re-aggregated over the shared samples)."""


def compare(runs: list[Path]) -> Comparison:
    """``runs``' scores side by side, restricted to the samples every run judged (so that no difference is one
    of sample sets). Raises ``BenchError`` for a run without scores or runs that share no sample."""
    if missing := [str(p) for p in runs if not (p / SCORES).is_file()]:
        raise BenchError(f"no {SCORES} in {', '.join(missing)}: run lwm bench score there first", option=True)
    scores = [(p.name, json.loads((p / SCORES).read_text())) for p in runs]
    judged = [judged_rows(p) for p in runs]
    if not all(judged):
        return Comparison(scores, judged)
    shared = set.intersection(*(set(rows) for rows in judged))
    counts = ", ".join(f"{p.name} has {len(r)}" for p, r in zip(runs, judged, strict=True))
    if not shared:
        raise BenchError(f"the runs share no samples ({counts}): nothing to compare")
    if all(len(rows) == len(shared) for rows in judged):
        return Comparison(scores, judged)
    judged = [{key: row for key, row in rows.items() if key in shared} for rows in judged]
    return Comparison([(p.name, aggregate(list(rows.values()))) for p, rows in zip(runs, judged, strict=True)],
                      judged, f"comparing on the {len(shared)} samples every run has ({counts})")
