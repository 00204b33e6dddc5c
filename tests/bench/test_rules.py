"""The rule metrics' formulas (bench/rules.py): the default judge and the RL reward."""

import pytest

from lwm.bench.rules import DIMENSIONS, rule_scores


def test_an_exact_answer_scores_five_everywhere():
    scores = rule_scores("a.txt\nb.txt", "a.txt\nb.txt", "history")
    assert all(scores[d] == 5.0 for d in DIMENSIONS) and scores["total_score"] == 5.0 and scores["exact"] == 1.0


def test_volatile_values_are_masked_before_comparing():
    a = rule_scores("started 2026-12-03 10:00:01 pid 4242", "started 2025-01-01 09:59:59 pid 9999")
    assert a["exact"] == 1.0 and a["total_score"] == 5.0


def test_format_for_json_is_validity_plus_key_overlap():
    reference = '{"name": "x", "size": 3}'
    assert rule_scores('{"name": "y", "size": 4}', reference)["format"] == 5.0
    assert rule_scores('{"name": "y"}', reference)["format"] == pytest.approx(1 + 4 * (0.5 + 0.5 * 0.5), abs=1e-4)
    assert rule_scores("name: y", reference)["format"] == 1.0  # not JSON at all


def test_format_for_text_is_line_shapes_and_line_count():
    # shape multisets {- x2} vs {- x4}: Jaccard 2/4; line counts 2 vs 4: ratio 2/4
    scores = rule_scores("- a\n- b", "- a\n- b\n- c\n- d")
    assert scores["format"] == pytest.approx(1 + 4 * (0.5 * (2 / 4) + 0.5 * (2 / 4)), abs=1e-4)


def test_factuality_is_token_f1():
    assert rule_scores("alpha beta", "alpha gamma")["factuality"] == pytest.approx(1 + 4 * 0.5, abs=1e-4)
    assert rule_scores("zzz", "alpha")["factuality"] == 1.0


def test_consistency_is_the_share_of_established_entities_repeated():
    history = "### Turn 1\ntouch notes.txt report.md"
    reference = "notes.txt report.md"
    assert rule_scores("notes.txt", reference, history)["consistency"] == pytest.approx(1 + 4 * 0.5, abs=1e-4)
    assert rule_scores("notes.txt report.md", reference, history)["consistency"] == 5.0
    no_entities = rule_scores("alpha beta", "alpha gamma", "")
    assert no_entities["consistency"] == no_entities["factuality"]  # nothing established: factuality stands in


def test_realism_is_error_agreement_and_length_ratio():
    same_kind = rule_scores("ok done", "ok done!")
    assert same_kind["realism"] == pytest.approx(1 + 4 * (0.6 + 0.4 * 7 / 8), abs=1e-4)
    disagree = rule_scores("Error: no such file", "ok")
    assert disagree["realism"] == pytest.approx(1 + 4 * (0.4 * 2 / 19), abs=1e-4)


def test_quality_is_recall_of_reference_lines():
    assert rule_scores("a\nb\nx", "a\nb\nc\nd")["quality"] == pytest.approx(1 + 4 * 0.5, abs=1e-4)
    assert rule_scores("", "")["quality"] == 5.0 and rule_scores("text", "")["quality"] == 1.0


def test_total_is_the_mean_of_the_five():
    scores = rule_scores("alpha beta\n- x", "alpha gamma\n- y\n- z", "")
    assert scores["total_score"] == pytest.approx(sum(scores[d] for d in DIMENSIONS) / 5, abs=1e-4)


def test_a_history_given_turn_by_turn_scores_as_the_whole_text():
    """The judge passes a history as its turns (each read once per run); no score may change for it."""
    from pathlib import Path

    from lwm.bench.samples import load_samples
    from lwm.conversation import history_parts

    samples = load_samples(Path(__file__).parents[2] / "data" / "bench-sample")
    deep = [s for s in samples if len(s.history) >= 2][:40]
    assert len(deep) == 40
    for i, sample in enumerate(deep):
        prediction = deep[(i + 1) % len(deep)].reference
        parts = history_parts(sample.history)
        assert rule_scores(prediction, sample.reference, parts) == rule_scores(prediction, sample.reference,
                                                                               "\n".join(parts))


def test_with_the_previous_observation_the_change_is_scored_not_the_overlap():
    """Hand-checked: after `touch c.txt`, `ls` shows one new name. Copying the previous listing earns no
    factuality or quality for the change; the right listing earns everything; on an unchanged screen
    copying is the right answer and scores in full."""
    previous, reference = "a.txt  b.txt", "a.txt  b.txt  c.txt"
    copied = rule_scores(previous, reference, previous=previous)
    right = rule_scores(reference, reference, previous=previous)
    wrong_new = rule_scores("a.txt  b.txt  d.txt", reference, previous=previous)
    # 1 of 3 words is new, so the change weighs max(1/3, CHANGE_WEIGHT 0.5): 0.5 x F1(copy, ref) + 0.5 x 0
    assert copied["factuality"] == pytest.approx(1 + 4 * (0.5 * 0.8), abs=1e-4)
    assert copied["factuality"] < rule_scores(previous, reference)["factuality"]  # plain overlap: 1 + 4 x 0.8
    assert right["total_score"] == 5.0 and right["factuality"] > wrong_new["factuality"] > copied["factuality"]
    unchanged = rule_scores(previous, previous, previous=previous)
    assert unchanged["total_score"] == 5.0


def test_a_whole_new_screen_gives_a_copy_no_content_credit():
    previous = "Title: Products\n- link Home\n- link Cart"
    reference = "Title: Checkout\nOrder total 12 EUR\nPay now"
    copied = rule_scores(previous, reference, previous=previous)
    # only "title" of the reference's 8 words was on the previous screen: 1/8 x F1(copy, ref) = 1/8 x 1/7
    assert copied["factuality"] == pytest.approx(1 + 4 / 56, abs=1e-4) and copied["quality"] == 1.0
    assert rule_scores(previous, reference)["factuality"] == pytest.approx(1 + 4 / 7, abs=1e-4)
