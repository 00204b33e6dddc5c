"""Agent RL over TRL: GRPO with multi-turn rollouts of the agent loop, in the simulator or the real env.

The packaged policy (SmolLM2-135M-Instruct) has a chat template that cannot carry tool calls, so TRL's
``environment_factory`` (which needs one) is not usable with it; TRL's ``rollout_func`` is, and it runs
``lwm.rollout.loop.run_episodes`` — the same loop ``lwm agent run`` uses — with the model being trained as
the policy (one batched ``generate`` per step for every episode of the batch). Each episode becomes one
completion: the policy's replies (trained on, ``env_mask`` 1) with the environment's observations between
them (context only, ``env_mask`` 0); its reward is the task's checker. No hand-written GRPO: the advantage,
loss, LoRA, checkpoints and resume are TRL's and ``lwm train``'s.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from lwm.backends import Message
from lwm.data.store import TrajectoryStore
from lwm.model_options import world_model as get_world_model
from lwm.rollout.loop import Episode, run_episodes
from lwm.rollout.policies import LocalPolicy, VLLMPolicy
from lwm.rollout.task_env import WORLD_MODEL_TOKENS
from lwm.rollout.tasks import Task, tasks
from lwm.train.common import load_model, lora_config, train_and_save
from lwm.train.config import StageConfig

log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class AgentRLConfig(StageConfig):
    """Agent GRPO on a task suite's train split (``lwm agent train``)."""

    domain: str = field(default="search", metadata={"help": "The suite: search, mcp or terminal."})
    mode: str = field(default="sim", metadata={"help": "sim (a world model plays the environment) or real."})
    world_model: str = field(default="embedded:lwm-mini", metadata={"help": "With mode: sim, the world model spec."})
    world_model_tokens: int = field(default=WORLD_MODEL_TOKENS, metadata={
        "help": "With mode: sim, most tokens in one simulated observation."})
    world_model_retrieve: list[str] = field(default_factory=list, metadata={
        "help": "With mode: sim, trajectory files whose real transitions the world model retrieves at each step "
                "(as `--retrieve`; none: the model's own)."})
    families: list[str] = field(default_factory=list, metadata={"help": "Only these task families (all if empty)."})
    limit: int | None = field(default=None, metadata={"help": "Only the first N train tasks."})
    episode_steps: int = field(default=4, metadata={"help": "Most actions per episode."})
    reply_tokens: int = field(default=96, metadata={"help": "Most tokens in one policy reply."})
    temperature: float = field(default=1.0, metadata={"help": "Policy sampling temperature during rollouts."})
    record: bool = field(default=True, metadata={"help": "Record every rollout in output_dir/rollouts."})
    control: str | None = field(default=None, metadata={
        "help": "A control spec (YAML) perturbing every rollout step: injected faults, drift, a world bible."})
    reward: str = field(default="gold", metadata={
        "help": "gold (the task's own check) or page (with mode: sim, one-row search lookups rewarded for "
                "answering what the simulated page said: the simulator as the only judge)."})

    trl_class: ClassVar[str] = "GRPOConfig"
    needs_data: ClassVar[bool] = False
    trl_defaults: ClassVar[dict[str, Any]] = {
        "max_steps": 20, "per_device_train_batch_size": 4, "num_generations": 4, "max_completion_length": 1024,
        "learning_rate": 1e-5, "seed": 0, "save_steps": 5, "logging_steps": 1, "activation_checkpointing": False}


def episode_tokens(messages: list[Message], tokenizer: Any, limit: int) -> tuple[list[int], list[int], list[int]]:
    """(prompt ids, completion ids, env mask) of an episode: the system prompt and first observation are the
    prompt; each reply (mask 1) and each later observation (mask 0) follow, cut at ``limit`` tokens."""
    def text(upto: int, generation: bool) -> str:
        return tokenizer.apply_chat_template(messages[:upto], add_generation_prompt=generation, tokenize=False)

    prompt = text(2, True)
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    completion: list[int] = []
    mask: list[int] = []
    previous = prompt
    for k in range(2, len(messages)):
        reply = messages[k]["role"] == "assistant"
        current = text(k + 1, not reply)
        if not current.startswith(previous):
            raise ValueError("the chat template does not render a conversation as a prefix of its continuation")
        ids = tokenizer(current[len(previous):], add_special_tokens=False)["input_ids"]
        # A reply is trained up to its end-of-turn token, which is where generation stopped; what the template
        # adds after it (a newline) is context. The episode ends on that token, so TRL sees it as finished.
        end = ids.index(tokenizer.eos_token_id) + 1 if reply and tokenizer.eos_token_id in ids else len(ids)
        completion += ids
        mask += [int(reply)] * end + [0] * (len(ids) - end)
        previous = current
        if k == len(messages) - 1:
            del completion[len(completion) - len(ids) + end:], mask[len(mask) - len(ids) + end:]
    return prompt_ids, completion[:limit], mask[:limit]


def make_rollout(config: AgentRLConfig, by_instruction: dict[str, Task], tokenizer: Any,
                 world_model: Any, store: TrajectoryStore | None) -> Any:
    def rollout(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        chosen = [by_instruction[p[-1]["content"] if isinstance(p, list) else p] for p in prompts]
        policy = VLLMPolicy(trainer, tokenizer, config.reply_tokens) if trainer.args.use_vllm else \
            LocalPolicy(trainer.accelerator.unwrap_model(trainer.model), tokenizer, config.reply_tokens,
                        config.temperature, name="policy-in-training")
        episodes: list[Episode] = run_episodes(chosen, policy, config.mode, world_model=world_model,  # type: ignore
                                               max_steps=config.episode_steps, store=store,
                                               seed=trainer.state.global_step * 1000, control=config.control)
        limit = trainer.args.max_completion_length
        prompt_ids, completion_ids, masks = [], [], []
        for episode in episodes:
            messages = episode.messages if len(episode.messages) > 2 else \
                [*episode.messages[:2], {"role": "assistant", "content": ""}]
            p, c, m = episode_tokens(messages, tokenizer, limit)
            prompt_ids.append(p)
            completion_ids.append(c or [tokenizer.eos_token_id])
            masks.append(m or [1])
        errors = sum(e.error is not None for e in episodes)
        if errors:
            log.warning("%d of %d rollouts ended with an error (reward 0), e.g. %s", errors, len(episodes),
                        next(e.error for e in episodes if e.error))
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": None, "env_mask": masks,
                "task_reward": [e.reward for e in episodes]}

    return rollout


def vllm_defaults(config: AgentRLConfig) -> dict[str, Any]:
    """Rollouts through TRL's vLLM integration where vLLM is installed and a GPU is there (colocated with the
    trainer unless the config says ``vllm_mode: server``), at the rollouts' temperature; HF generate otherwise.
    A config's own ``use_vllm`` wins."""
    from importlib.util import find_spec

    if "use_vllm" in config.trainer or find_spec("vllm") is None:
        return {}
    from lwm.train.device import best_device

    if not best_device().startswith("cuda"):
        return {}
    return {"use_vllm": True, "vllm_mode": config.trainer.get("vllm_mode", "colocate"),
            "temperature": config.temperature}


def task_reward(prompts: list[Any], completions: list[Any], task_reward: list[float], **_: Any) -> list[float]:
    """The checker's reward of each rollout (computed in the rollout, where the environment is)."""
    return list(task_reward)


def simulator(config: AgentRLConfig) -> Any:
    """The world model that plays the environment in a ``mode: sim`` run (None in a real one)."""
    if config.mode != "sim":
        return None
    return get_world_model(config.world_model, max_tokens=config.world_model_tokens,
                           retrieve=[Path(p) for p in config.world_model_retrieve] or None)


def train_agent(config: AgentRLConfig) -> dict[str, Any]:
    from datasets import Dataset
    from trl import GRPOTrainer

    if config.mode not in ("sim", "real"):
        raise ValueError(f"mode must be sim or real, not {config.mode!r}")
    if config.reward not in ("gold", "page") or (config.reward == "page" and config.mode != "sim"):
        raise ValueError(f"reward must be gold, or page with mode: sim; not {config.reward!r} with mode: {config.mode}")
    chosen = tasks(config.domain, "train", config.families)
    if config.reward == "page":
        from lwm.agent.search_suite import judged_by_page  # the search suite's titles: only page-rewarded runs

        chosen = [judged_by_page(t) for t in chosen]
    if config.mode == "real" and any(t.check.kind == "observed" for t in chosen):
        log.warning("leaving out the sim-only tasks (made-up entities: %s) in the real environment",
                    ", ".join(sorted({t.family for t in chosen if t.check.kind == "observed"})))
        chosen = [t for t in chosen if t.check.kind != "observed"]
    chosen = chosen[: config.limit] if config.limit else chosen
    if not chosen:
        raise ValueError(f"no {config.domain} train tasks{' in ' + str(config.families) if config.families else ''}")
    by_instruction = {t.instruction: t for t in chosen}
    model, tokenizer = load_model(config.model, config.seed)
    world_model = simulator(config)
    output_dir = Path(config.output_dir)
    rank = int(os.environ.get("RANK", "0"))  # accelerate launch / torchrun: each rank records its own rollouts
    rollouts = output_dir / ("rollouts" if rank == 0 else f"rollouts-rank{rank}")
    store = TrajectoryStore(rollouts) if config.record else None
    dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": t.instruction}], "task_id": t.id}
                                 for t in by_instruction.values()])
    trainer = GRPOTrainer(model=model, reward_funcs=[task_reward], args=config.trl_args(**vllm_defaults(config)),
                          train_dataset=dataset,
                          processing_class=tokenizer, peft_config=lora_config(config, model),
                          rollout_func=make_rollout(config, by_instruction, tokenizer, world_model, store))
    return train_and_save(trainer, tokenizer, config)


def demonstrations(episodes: Sequence[Episode]) -> list[dict[str, Any]]:
    """SFT rows (TRL prompt/completion) from successful episodes: one row per reply, its conversation so far
    as the prompt. Used to warm a policy up on scripted expert episodes before RL."""
    rows = []
    for episode in episodes:
        if episode.error or episode.reward < 1.0:
            continue
        for k, message in enumerate(episode.messages):
            if message["role"] == "assistant":
                rows.append({"id": f"{episode.task.id}-r{k}", "domain": episode.task.domain,
                             "prompt": episode.messages[:k], "completion": [message]})
    return rows

