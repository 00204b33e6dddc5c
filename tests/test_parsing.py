import pytest

from lwm.parsing import parse_answer, split_reasoning, strip_marker


@pytest.mark.parametrize(
    "raw, content, status",
    [
        ("<predicted_observation>a</predicted_observation>", "a", "tagged"),
        ("<think>plan</think>\n<predicted_observation>\nx\ny\n</predicted_observation>", "x\ny", "tagged"),
        ("<think>draft <predicted_observation>wrong</predicted_observation></think><predicted_observation>right</predicted_observation>", "right", "tagged"),
        ("<predicted_observation>first</predicted_observation> <predicted_observation>last</predicted_observation>", "last", "tagged"),
        ("<think>outer <think>inner</think> still outer</think>answer", "answer", "untagged"),
        ("<think>never closed, generation stopped", "", "empty"),
        ("<think>unclosed but answered <predicted_observation>obs", "obs", "tagged"),
        ("reasoning the template opened</think><predicted_observation>z</predicted_observation>", "z", "tagged"),
        ("<predicted_observation>unclosed answer\nline 2", "unclosed answer\nline 2", "tagged"),
        ("just text\n", "just text", "untagged"),
        ("", "", "empty"),
        ("<predicted_observation>  </predicted_observation>", "", "empty"),
        ("**Environment Observation:**\nroot@x:/# ", "root@x:/#", "untagged"),
        ("<PREDICTED_OBSERVATION>Upper</PREDICTED_OBSERVATION>", "Upper", "tagged"),
    ],
)
def test_parse_answer(raw, content, status):
    parsed = parse_answer(raw)
    assert (parsed.content, parsed.status) == (content, status)


def test_reasoning_is_kept_separately():
    parsed = parse_answer("<think>a</think><think>b</think><predicted_observation>o</predicted_observation>")
    assert parsed.reasoning == "a\nb"
    assert parse_answer("<predicted_observation>o</predicted_observation>", reasoning="server-side").reasoning == "server-side"


def test_nested_think_keeps_inner_text_in_reasoning():
    rest, thought = split_reasoning("<think>x <think>y</think> z</think>done")
    assert rest == "done" and "y" in thought and "z" in thought


def test_strip_marker_keeps_leading_spaces_of_untagged_screens():
    assert strip_marker("  indented\n") == "  indented"
    assert strip_marker("**Environment Observation:**\n{\"a\": 1}") == '{"a": 1}'
