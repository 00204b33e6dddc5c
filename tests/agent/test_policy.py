"""Policies (lwm.agent.policy): scripted replies, the experts' demonstrations, specs to policies."""

import json

import pytest

from lwm.agent.policy import ExpertPolicy, ReaderPolicy, expert_replies, make_policy
from lwm.rollout.checks import check, final_answer
from lwm.rollout.loop import Episode
from lwm.rollout.policies import ModelPolicy, ScriptedPolicy, call
from lwm.rollout.tasks import get_task, tasks


def test_scripted_replies_follow_each_conversations_turn():
    policy = ScriptedPolicy(["first", "second"])
    one = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    two = [*one, {"role": "assistant", "content": "first"}, {"role": "user", "content": "u2"}]
    assert policy.act([Episode(None, messages=one), Episode(None, messages=two)]) == ["first", "second"]


def test_the_experts_answer_is_right_by_the_tasks_own_table_check():
    task = get_task("search/syscall-0004")
    replies = expert_replies(task)
    assert json.loads(replies[0].removeprefix("```json\n").removesuffix("\n```"))["name"] == "web_search"
    answer = final_answer(replies[-1].removeprefix("```json\n").removesuffix("\n```"))
    assert check(task, answer, [], env=None)[0] == 1.0


def test_the_expert_acts_on_each_episodes_own_task():
    chosen = [get_task("mcp/memory-relation-0000"), get_task("search/syscall-0004")]
    conversation = [{"role": "system", "content": "You are an agent.\n\nTools: ..."}, {"role": "user", "content": "start"}]
    episodes = [Episode(task, messages=list(conversation)) for task in chosen]
    assert ExpertPolicy().act(episodes) == [expert_replies(chosen[0])[0], expert_replies(chosen[1])[0]]
    with pytest.raises(ValueError, match="acts on tasks"):
        ExpertPolicy().act([Episode(None, domain="search")])


def test_specs_make_the_right_policy_and_the_reader_refuses_what_it_cannot_read():
    chosen = tasks("search", "heldout", ["syscall-lookup"])[:1]
    assert isinstance(make_policy("expert", chosen), ExpertPolicy)
    assert isinstance(make_policy("reader", chosen), ReaderPolicy)
    assert isinstance(make_policy("mock"), ModelPolicy)
    with pytest.raises(ValueError, match="signal"):
        ReaderPolicy(tasks("search", "train", ["signal"])[:1])
    assert call("final_answer", answer="x") == '```json\n{"name": "final_answer", "arguments": {"answer": "x"}}\n```'


def test_a_sampled_local_policy_with_a_seed_replies_the_same_each_run(tiny_model_dir):
    """An eval at temperature 1 is reproducible by its seed (lwm agent eval --seed): each batch draws from the
    seed plus its number, so two evals of one seed sample alike and other seeds sample otherwise."""
    import torch

    from lwm.rollout.policies import LocalPolicy

    asked = [[{"role": "user", "content": "ls"}], [{"role": "user", "content": "pwd -P"}]]

    def replies(seed: int) -> list[str]:
        policy = LocalPolicy.load(str(tiny_model_dir), max_new_tokens=12, temperature=1.0, seed=seed)
        torch.manual_seed(12345 + seed)  # whatever else drew before does not matter
        return policy.reply(asked) + policy.reply(asked)

    assert replies(3) == replies(3)
    assert replies(3) != replies(4)
