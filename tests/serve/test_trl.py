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


@pytest.mark.slow
def test_trls_grpo_trains_the_packaged_policy_against_a_served_environment(tmp_path):
    """TRL's own environment path end to end at toy size: the packaged SmolLM2 with a tool template, GRPO steps
    whose rollouts call the served (simulated) terminal through environment_factory."""
    pytest.importorskip("trl")
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from lwm.serve.trl import with_tool_template
    from lwm.train.base_model import base_model_dir

    folder = base_model_dir("smollm2")
    tokenizer = with_tool_template(AutoTokenizer.from_pretrained(folder))
    model = AutoModelForCausalLM.from_pretrained(folder)
    prompts = Dataset.from_list([{"prompt": [{"role": "user", "content": "Count the lines of data.txt."}]}] * 4)
    args = GRPOConfig(output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=2, num_generations=2,
                      max_completion_length=48, report_to=[], use_cpu=True, logging_steps=1, save_strategy="no")
    with ThreadedServer(openenv_app(ServeConfig(domain="terminal", model="mock"))) as server:
        trainer = GRPOTrainer(model=model, args=args, train_dataset=prompts, processing_class=tokenizer,
                              reward_funcs=[lambda completions, **_: [0.0] * len(completions)],
                              environment_factory=environment_factory(server.url, "terminal"))
        trainer.train()
    assert trainer.state.global_step == 1 and any("loss" in e for e in trainer.state.log_history)
