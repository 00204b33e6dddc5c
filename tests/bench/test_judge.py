import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lwm.bench.judge import parse_verdict
from lwm.parsing import parse_answer

GOOD = '{"strengths": ["a"], "weaknesses": [], "scores": {"format": 5, "factuality": 4, "consistency": 4, "realism": 5, "quality": 3}}'


@pytest.mark.parametrize("raw", [
    f"<final_evaluation>{GOOD}</final_evaluation>",
    f"Let me think. The output is close.\n<final_evaluation>\n```json\n{GOOD}\n```\n</final_evaluation>",
    f"<think>hmm</think><final_evaluation>{GOOD[:-2]},}}}}</final_evaluation>",
    '<final_evaluation>{"scores": {"format": "5/5", "factuality": "4", "consistency": 4.0, "realism": 4.6, '
    '"quality": 3}}</final_evaluation>',
    "<final_evaluation>{scores: {'format': 5, factuality: 4, consistency: 4, realism: 5, quality: 3,},}"
    "</final_evaluation>",
    f"no tags at all but {GOOD}",
    f'first a draft {{"scores": {{"format": 1}}}} then <final_evaluation>{GOOD}',
    f'```json\n{{"note": "no scores here"}}\n```\n```json\n{GOOD}\n```\n```json\n{{"x": 1}}\n```',
])
def test_verdicts_parse_despite_fences_commas_fractions_and_reasoning(raw):
    verdict = parse_verdict(raw)
    assert verdict["scores"] == {"format": 5, "factuality": 4, "consistency": 4, "realism": 5, "quality": 3}
    assert verdict["total_score"] == pytest.approx(4.2)


def test_verdict_semantics_are_the_published_ones():
    """Out-of-range scores are clamped, a missing, zero or misspelt dimension is left out of the mean (not a
    failed verdict), and only a verdict with no 'scores' object at all fails."""
    verdict = parse_verdict('<final_evaluation>{"scores": {"format": 9, "Factuality": 4, "consistency": 0, '
                            '"realism": "2/5", "quality": "n/a"}}</final_evaluation>')
    assert verdict["scores"] == {"format": 5, "realism": 2}
    assert verdict["total_score"] == pytest.approx(3.5)
    nothing = parse_verdict('<final_evaluation>{"scores": {}}</final_evaluation>')
    assert nothing["scores"] == {} and nothing["total_score"] is None


@pytest.mark.parametrize("raw, reason", [
    ("<final_evaluation>not json</final_evaluation>", "no JSON object"),
    ('<final_evaluation>{"verdict": "good"}</final_evaluation>', "no 'scores'"),
    ('<final_evaluation>{"scores": {"format": 5/5}}</final_evaluation>', "not valid JSON"),
    ("", "empty"),
])
def test_unparseable_verdicts_say_why(raw, reason):
    with pytest.raises(ValueError, match=reason):
        parse_verdict(raw)


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_verdict_parser_never_crashes(text):
    try:
        parse_verdict(text)
    except ValueError:
        pass


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["<think>", "</think>", "<predicted_observation>", "</predicted_observation>",
                                 "text", "\n", "**Environment Observation:**", "<", ">", "x"]), max_size=30))
def test_observation_parser_never_crashes_on_tag_soup(parts):
    parsed = parse_answer("".join(parts))
    assert parsed.status in {"tagged", "untagged", "empty"}
    assert "<predicted_observation>" not in parsed.content.lower() or parsed.status == "untagged"
