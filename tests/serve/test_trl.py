"""The TRL environment_factory classes: the tools TRL would build from them, and a rollout through them
against a served environment."""

import inspect
import json
import shutil

import pytest

pytest.importorskip("openenv.core")
pytest.importorskip("transformers")

from lwm.serve.openenv import openenv_app  # noqa: E402
from lwm.serve.session import ServeConfig  # noqa: E402
from lwm.serve.trl import describe, environment_factory  # noqa: E402
from lwm.testing.asgi import ThreadedServer  # noqa: E402


def tools_trl_would_show(env_class) -> list[str]:
    """The methods TRL's GRPOTrainer turns into tools (its rule: public functions but reset and get_reward)."""
    return [n for n, _ in inspect.getmembers(env_class, predicate=inspect.isfunction)
            if n not in ("reset", "get_reward") and not n.startswith("_")]


@pytest.mark.parametrize(("domain", "task", "tools"), [
    ("terminal", None, ["type_keys"]), ("search", "search/syscall-0000", ["call_tool", "final_answer"]),
    ("search", None, ["call_tool"]), ("web", None, ["act"])])
def test_each_domain_gets_tools_with_schemas(domain, task, tools):
    env_class = environment_factory("http://127.0.0.1:1", domain, task)
    assert tools_trl_would_show(env_class) == tools
    schemas = json.loads(describe(env_class))
    assert [s["function"]["name"] for s in schemas] == tools
    assert all(s["function"]["description"] and s["function"]["parameters"]["required"] for s in schemas)


@pytest.mark.skipif(not (shutil.which("tmux") and shutil.which("bwrap")), reason="needs tmux and bubblewrap")
def test_a_rollout_through_the_factory_on_the_real_terminal_task_is_rewarded():
    config = ServeConfig(domain="terminal", mode="real")
    with ThreadedServer(openenv_app(config)) as server:
        env = environment_factory(server.url, "terminal", task="terminal/count-lines-0000")()
        assert env.reset() is not None
        screen = env.type_keys("wc -l < data.txt > count.txt; cat count.txt\n")
        assert "39" in screen and env.get_reward() == 0.0
        env.final_answer("done")
        assert env.get_reward() == 1.0
        del env
