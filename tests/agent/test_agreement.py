"""The simulated checker against the real one on the same real episodes (lwm.agent.agreement), real MCP server."""

import pytest

from lwm.agent.agreement import agreement
from lwm.backends import MockBackend
from lwm.rollout.tasks import get_task
from lwm.worldmodel import WorldModel
from tests.envs.real.conftest import needs_sandbox


@needs_sandbox
def test_a_world_model_that_always_predicts_the_expected_state_agrees_on_solved_episodes_only(tmp_path):
    task = get_task("mcp/memory-entity-0000")
    says_solved = WorldModel(MockBackend(lambda m: "<predicted_observation>" + " ".join(task.check.expect)
                                         + "</predicted_observation>"), cache=False)
    rows = agreement([task], says_solved, tmp_path)
    by_policy = {r.policy: r for r in rows}
    assert (by_policy["expert"].real, by_policy["expert"].sim, by_policy["expert"].agree) == (1.0, 1.0, True)
    assert (by_policy["idle"].real, by_policy["idle"].sim, by_policy["idle"].agree) == (0.0, 1.0, False)
    assert task.check.expect[0] in by_policy["expert"].real_observation
    assert {p.name for p in tmp_path.iterdir()} == {"expert", "idle"}  # each policy's real episodes recorded


def test_only_state_checks_can_agree():
    with pytest.raises(ValueError, match="state-checked"):
        agreement([get_task("search/syscall-0004")], WorldModel(MockBackend(), cache=False))
