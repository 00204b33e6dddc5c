"""Options every model-using command shares, and the one place that turns them into a WorldModel."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lwm.backends import DEFAULT_SPEC, GenerateConfig
from lwm.worldmodel import WorldModel

Model = Annotated[str, typer.Option("--model", "-m", help="Model spec: embedded, embedded:<path.gguf>, "
                                    "openai:<name>, transformers:<dir>, mock.", envvar="LWM_MODEL")]
BaseUrl = Annotated[str | None, typer.Option(help="OpenAI-compatible base URL (or OPENAI_BASE_URL).")]
ApiKey = Annotated[str | None, typer.Option(help="API key (or OPENAI_API_KEY).")]
Temperature = Annotated[float, typer.Option(help="Sampling temperature (0 = greedy).")]
Seed = Annotated[int, typer.Option(help="Sampling seed.")]
MaxTokens = Annotated[int, typer.Option(help="Most tokens in one answer.")]
PromptsDir = Annotated[Path | None, typer.Option(help="Templates laid out as <dir>/<domain>/system_prompt.txt "
                                                "(Qwen-AgentWorld's prompts/ layout).")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the answer cache.")]
DEFAULT_MODEL = DEFAULT_SPEC


def make_world_model(model: str, base_url: str | None, api_key: str | None, temperature: float, seed: int,
                     max_tokens: int, prompts_dir: Path | None, no_cache: bool,
                     concurrency: int | None = None) -> WorldModel:
    config = GenerateConfig(temperature=temperature, seed=seed, max_tokens=max_tokens)
    return WorldModel(model, config=config, cache=not no_cache, prompts_dir=prompts_dir,
                      base_url=base_url, api_key=api_key, concurrency=concurrency)
