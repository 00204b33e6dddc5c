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
    '<final_evaluation>{"scores": {"Format": "5/5", "factuality": "4", "consistency": 4.0, "realism": 5/5, '
    '"quality": 3}}</final_evaluation>',
    f"no tags at all but {GOOD}",
])
def test_verdicts_parse_despite_fences_commas_fractions_and_reasoning(raw):
    verdict = parse_verdict(raw)
    assert verdict["scores"] == {"format": 5, "factuality": 4, "consistency": 4, "realism": 5, "quality": 3}
    assert verdict["total_score"] == pytest.approx(4.2)


@pytest.mark.parametrize("raw, reason", [
    ("<final_evaluation>not json</final_evaluation>", "no JSON object"),
    ('<final_evaluation>{"scores": {"format": 9}}</final_evaluation>', "format"),
    ('<final_evaluation>{"scores": {"format": 5}}</final_evaluation>', "factuality"),
    ("", "no JSON object"),
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
