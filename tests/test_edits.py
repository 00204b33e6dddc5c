"""Edit answers: applied against the named base, malformed ones fall back to it, whole answers untouched."""

from hypothesis import given, settings
from hypothesis import strategies as st

from lwm.edits import apply_answer, edit_target, is_edit

SCREEN = "user@sandbox:~$ ls\na.txt  b.txt\nuser@sandbox:~$ "


def edit(base: str, *blocks: tuple[str, str]) -> str:
    return "\n".join([f"@edit {base}", *(f"<<<<<<< SEARCH\n{s}\n=======\n{r}\n>>>>>>> REPLACE" if s else
                                         f"<<<<<<< SEARCH\n=======\n{r}\n>>>>>>> REPLACE" for s, r in blocks)])


def test_an_edit_replaces_lines_of_the_previous_observation():
    answer = edit("previous", ("user@sandbox:~$ ", "user@sandbox:~$ cat a.txt\nhello\nuser@sandbox:~$ "))
    applied = apply_answer(answer, ["first", SCREEN])
    assert applied.content == "user@sandbox:~$ ls\na.txt  b.txt\nuser@sandbox:~$ cat a.txt\nhello\nuser@sandbox:~$ "
    assert applied.status == "applied" and applied.blocks == 1 and applied.base == "previous"


def test_an_edit_against_a_named_earlier_turn_and_an_example():
    history = ['{\n  "rows": [1, 2],\n  "n": 2\n}', "Error: no such table", "ok"]
    answer = edit("turn 1", ('  "rows": [1, 2],\n  "n": 2', '  "rows": [1, 2, 3],\n  "n": 3'))
    assert apply_answer(answer, history).content == '{\n  "rows": [1, 2, 3],\n  "n": 3\n}'
    assert apply_answer("@edit example 2", history, ["ex one", "ex two"]).content == "ex two"
    assert apply_answer("@edit", history).content == "ok"  # no block: the base as it is


def test_an_empty_search_appends_and_trailing_spaces_do_not_matter():
    assert apply_answer(edit("previous", ("", "more")), ["line"]).content == "line\nmore"
    padded = "a   \nb   \nc"
    assert apply_answer(edit("previous", ("a\nb", "A\nB")), [padded]).content == "A\nB\nc"


def test_malformed_edits_fall_back_to_the_base_and_say_why():
    cases = {
        edit("turn 9", ("a", "b")): "no turn 9",
        edit("previous", ("not there", "b")): "SEARCH text not in the base",
        edit("previous", ("a.txt", "b")): "SEARCH text not in the base",  # part of a line is not a line
        "@edit previous\n<<<<<<< SEARCH\na.txt\n=======\nb": "not closed",
        "@edit previous\nsome prose": "expected",
        "@edit the other page": "unknown base",
        edit("example 1", ("a", "b")): "no example 1",
    }
    for answer, why in cases.items():
        applied = apply_answer(answer, ["x", SCREEN])
        assert applied.status == "malformed" and applied.content == SCREEN and why in (applied.error or ""), answer
    # a first turn has no previous observation: the edit's own REPLACE text stands, then the initial state
    first_turn = apply_answer(edit("previous", ("a", "b")), [])
    assert first_turn.status == "malformed" and first_turn.content == "b"
    assert apply_answer("@edit example 2", [], [], initial="$ ").content == "$ "


def test_a_first_turn_edit_applies_to_the_initial_state():
    applied = apply_answer(edit("previous", ("", "total 0\n$ ")), [], initial="user@box:~$ ls")
    assert applied.status == "applied" and applied.content == "user@box:~$ ls\ntotal 0\n$ "


def test_a_cut_answer_closes_its_last_block_where_the_text_ends():
    cut = "@edit previous\n<<<<<<< SEARCH\nuser@sandbox:~$\n=======\nuser@sandbox:~$ ls\nx"
    assert apply_answer(cut, [SCREEN]).status == "malformed"
    applied = apply_answer(cut, ["a\nuser@sandbox:~$"], cut=True)
    assert applied.status == "applied" and applied.content == "a\nuser@sandbox:~$ ls\nx"


def test_a_whole_answer_is_left_as_it_is():
    for whole in (SCREEN, "", "the edit button is @edit here", "  results:\n@edit previous"):
        applied = apply_answer(whole, ["base"])
        assert applied.status == "whole" and applied.content == whole and not is_edit(whole)


def test_edit_targets_apply_back_and_are_short_where_little_changes():
    new = SCREEN + "cat a.txt\nhello\nuser@sandbox:~$ "
    target = edit_target(SCREEN, new)
    assert target is not None and apply_answer(target, [SCREEN]).content == new
    assert len(target) < len(new) + 40
    tree = "\n".join(f"[{i}] link 'item {i}'" for i in range(200))
    changed = tree.replace("[57] link 'item 57'", "[57] link 'item 57' focused")
    target = edit_target(tree, changed)
    assert target is not None and len(target) < len(changed) / 10
    assert apply_answer(target, [tree]).content == changed


lines = st.lists(st.sampled_from(["a", "b", "c", "", "$ ls", "x y"]), max_size=12).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(lines, lines)
def test_an_edit_target_when_made_always_rebuilds_the_observation(base, new):
    target = edit_target(base, new)
    if target is not None:
        assert apply_answer(target, [base]).content == new


def test_simenv_and_a_served_session_show_whole_observations_for_edit_answers():
    """Through the real paths: SimEnv's step, and a served session's step (the OpenEnv/MCP core)."""
    from lwm.backends import MockBackend
    from lwm.envs import SimEnv
    from lwm.serve.session import ServeConfig, Session
    from lwm.worldmodel import WorldModel

    answers = ["<predicted_observation>user@sandbox:~$ ls\na.txt\nuser@sandbox:~$</predicted_observation>",
               "<predicted_observation>@edit previous\n<<<<<<< SEARCH\na.txt\n=======\na.txt  b.txt\n"
               ">>>>>>> REPLACE</predicted_observation>",
               "<predicted_observation>@edit turn 1</predicted_observation>",
               "<predicted_observation>@edit previous\n<<<<<<< SEARCH\nnowhere\n=======\nx\n>>>>>>> REPLACE"
               "</predicted_observation>"]
    expected = ["user@sandbox:~$ ls\na.txt\nuser@sandbox:~$", "user@sandbox:~$ ls\na.txt  b.txt\nuser@sandbox:~$",
                "user@sandbox:~$ ls\na.txt\nuser@sandbox:~$", "user@sandbox:~$ ls\na.txt\nuser@sandbox:~$"]
    statuses = [None, "applied", "applied", "malformed"]
    env = SimEnv(WorldModel(MockBackend(list(answers)), cache=False), "terminal")
    env.reset(seed=0)
    for want, status in zip(expected, statuses, strict=True):
        obs, _, _, _, info = env.step('[{"keystrokes": "ls\\n", "duration": 0.1}]')
        assert obs == want
        assert env.trajectory.turns[-1].observation.content == want
        assert env.trajectory.turns[-1].observation.metadata.get("edit", {}).get("status") == status
    session = Session(ServeConfig(domain="terminal", model="mock"), WorldModel(MockBackend(list(answers)),
                                                                                 cache=False), "test")
    session.reset(seed=0)
    assert [session.step([{"keystrokes": "ls\n"}]).observation for _ in answers] == expected


def test_the_rl_reward_scores_an_edit_as_the_whole_observation_it_stands_for():
    import pytest

    pytest.importorskip("trl")
    from lwm.bench.scorer import load_scorer
    from lwm.train.rl import scorer_reward

    before = "user@sandbox:~$ ls\na.txt\nuser@sandbox:~$"
    real = "user@sandbox:~$ ls\na.txt\nuser@sandbox:~$ cat a.txt\nhello\nuser@sandbox:~$"
    answer = edit_target(before, real)
    assert answer is not None
    prompt = [{"role": "system", "content": "simulate"}, {"role": "user", "content": "cat a.txt"}]
    history = [["### Turn 1\nls", f"**Environment Observation:**\n{before}"]]
    completions = [[{"role": "assistant", "content": f"<predicted_observation>{a}</predicted_observation>"}]
                   for a in (answer, real, "@edit turn 7")]
    rewards = scorer_reward(load_scorer("rules"))([prompt] * 3, completions, reference=[real] * 3,
                                                  history=[history] * 3, domain=["terminal"] * 3)
    assert rewards[0] == pytest.approx(1.0) == rewards[1]  # the edit scores as the real screen itself
    assert rewards[2] < rewards[0]  # a malformed edit is its base (the previous screen), not the answer


def test_an_edit_of_a_retrieved_example_that_brings_another_sessions_page_is_said_and_counted():
    """A fresh web session once answered a click with a 20 KB manual page of another session, through
    `@edit example 1`, and nothing said so: now the observation's edit is marked unrelated, the note says it and
    the bench report counts it; an example that shares the session's screen is not marked."""
    from lwm.backends import MockBackend
    from lwm.bench.report import _answers
    from lwm.envs import SimEnv
    from lwm.forms import answer_note
    from lwm.retrieval import Transition, TransitionIndex
    from lwm.worldmodel import WorldModel

    manual = "Bash Reference Manual. Shell Parameter Expansion: the dollar character introduces expansion " * 20
    action = '[{"keystrokes": "ls\\n", "duration": 0.1}]'
    for after, unrelated in ((manual, True), ("user@sandbox:~$ ls\nnotes.txt\nuser@sandbox:~$", False)):
        index = TransitionIndex.of([Transition("terminal", "other", "t-other", 1, action, "user@sandbox:~$", after)])
        wm = WorldModel(MockBackend(["<predicted_observation>@edit example 1</predicted_observation>"]),
                        cache=False, retriever=index, edits=True)
        env = SimEnv(wm, "terminal")
        env.reset(seed=0)
        obs, _, _, _, info = env.step(action)
        assert obs == after and info["edit"]["base"] == "example 1"
        assert bool(info["edit"].get("unrelated")) is unrelated
        # asked again (a resample, then without examples) and the same page came back: kept, and said
        assert ((info.get("form") or {}).get("unrelated") == "kept") is unrelated
        assert ("it edited retrieved example 1" in answer_note(info)) is unrelated
        assert ("edit of an unrelated example" in _answers([{"edit": info["edit"]}])) is unrelated
    # a second answer that edits the session's own screen replaces the pasted page
    index = TransitionIndex.of([Transition("terminal", "other", "t-other", 1, action, "user@sandbox:~$", manual)])
    wm = WorldModel(MockBackend(["<predicted_observation>@edit example 1</predicted_observation>",
                                 "<predicted_observation>user@sandbox:~$ ls\nnotes.txt</predicted_observation>"]),
                    cache=False, retriever=index, edits=True)
    env = SimEnv(wm, "terminal")
    env.reset(seed=0)
    obs, _, _, _, info = env.step(action)
    assert obs == "user@sandbox:~$ ls\nnotes.txt" and info["form"]["unrelated"] == "resampled"
