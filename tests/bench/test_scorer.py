"""Scorers: registered under `metric`, one verdict shape, and an LLM judge that retries parse failures only."""

import pytest

from lwm.bench.samples import BenchSample
from lwm.bench.scorer import LLMJudge, RuleScorer, Scorer, load_scorer
from lwm.registry import names
from lwm.testing.openai_server import ScriptedServer
from lwm.worldmodel import run_sync

VERDICT = ('<final_evaluation>{"scores": {"format": 5, "factuality": 3, "consistency": 5, "realism": 4, '
           '"quality": 3}}</final_evaluation>')
SAMPLE = BenchSample(task="terminal", id="s", prompt=["### Turn 1\nls", "### Turn 2\ncat notes.txt"],
                     response=["**Environment Observation:**\nnotes.txt", "**Environment Observation:**\nhello"],
                     system_str="simulate a terminal", turn_idx=2)


def test_both_scorers_are_registered_metrics_and_follow_the_protocol():
    assert {"rules", "llm"} <= set(names("metric"))
    assert isinstance(load_scorer("rules"), RuleScorer) and isinstance(load_scorer("rules"), Scorer)
    assert isinstance(load_scorer("llm", backend="mock"), LLMJudge)
    assert isinstance(load_scorer("mock"), LLMJudge)  # any other spec is an LLM judge on that model


def test_the_rule_scorer_reads_the_history_and_reference():
    exact = run_sync(load_scorer("rules").score(SAMPLE, "hello"))
    assert exact.total_score == 5.0 and exact.exact == 1.0 and exact.reward == 1.0 and not exact.failed
    wrong = run_sync(load_scorer("rules").score(SAMPLE, "cat: notes.txt: No such file or directory"))
    assert wrong.total_score < 3 and wrong.judge == "rules"


def test_the_llm_judge_retries_unparsable_answers_with_a_new_seed():
    with ScriptedServer(["not a verdict", "still not", VERDICT]) as server:
        judge = load_scorer(f"openai:judge?base_url={server.base_url}", retries=3)
        verdict = run_sync(judge.score(SAMPLE, "hello"))
        seeds = [r["seed"] for r in server.requests]
    assert verdict.total_score == pytest.approx(4.0) and verdict.factuality == 3 and seeds == [0, 1, 2]
    with ScriptedServer(["never"]) as server:
        verdict = run_sync(load_scorer(f"openai:judge?base_url={server.base_url}", retries=2).score(SAMPLE, "x"))
    assert verdict.failed == 1.0 and "not parsed" in verdict.error_message and "2 attempts" in verdict.error_message


def test_a_failed_judge_call_is_not_retried_again_by_the_judge():
    with ScriptedServer([VERDICT]) as server:
        server.inject("status", status=400, times=5)  # the backend does not retry a 400: it fails for good
        verdict = run_sync(load_scorer(f"openai:judge?base_url={server.base_url}", retries=3).score(SAMPLE, "x"))
        requests = len(server.requests)
    assert verdict.failed == 1.0 and verdict.error_message.startswith("judge call failed") and requests == 1
