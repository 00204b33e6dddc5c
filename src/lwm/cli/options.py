"""The model options every model-using command shares, declared once: ``@model_options()`` adds them
to a command's parameters and hands the command one ``ModelOptions``, which builds the WorldModel."""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from lwm.model_options import ModelOptions

F = TypeVar("F", bound=Callable[..., Any])
Model = Annotated[str, typer.Option("--model", "-m", help="Model spec: embedded:lwm-mini (the default), "
                                    "embedded:smollm2 (its untrained base), embedded:<path.gguf>, openai:<name>, "
                                    "transformers:<dir>, copy-last, echo-action, mock.", envvar="LWM_MODEL")]
BaseUrl = Annotated[str | None, typer.Option(help="OpenAI-compatible base URL (or OPENAI_BASE_URL).")]
ApiKey = Annotated[str | None, typer.Option(help="API key (or OPENAI_API_KEY).")]
Temperature = Annotated[float, typer.Option(help="Sampling temperature (0 = greedy).")]
Seed = Annotated[int, typer.Option(help="Sampling seed.")]
MaxTokens = Annotated[int, typer.Option(help="Most tokens in one answer.")]
PromptsDir = Annotated[Path | None, typer.Option(help="Templates laid out as <dir>/<domain>/system_prompt.txt "
                                                "(Qwen-AgentWorld's prompts/ layout).")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the answer cache.")]
Timeout = Annotated[float, typer.Option(help="A server's (openai:) most seconds for one answer before it is retried.")]
Retries = Annotated[int, typer.Option(help="Retries of a server's (openai:) failed or timed-out answer.")]
Guard = Annotated[bool, typer.Option("--guard", help="Consistency guard: check each prediction against the facts "
                                     "the session fixed (repeated reads, entity fields); sample again or repair "
                                     "on conflict.")]
Edits = Annotated[bool | None, typer.Option("--edits/--no-edits", help="Ask the model for edits against an earlier "
                                            "observation (lwm.edits), which lwm applies; any answer may be an edit. "
                                            "Default: as the model was trained (on for embedded:lwm-mini).",
                                            show_default=False)]
Retrieve = Annotated[list[Path] | None, typer.Option(help="Show the model the nearest real transitions from these "
                                                     "trajectory files, collections or *.transitions.jsonl.xz files "
                                                     "(never a held-out split's). Default: the model's own "
                                                     "(embedded:lwm-mini ships its training transitions), else none.")]
NoRetrieve = Annotated[bool, typer.Option("--no-retrieve", help="Show no retrieved transitions, not even the "
                                          "model's own.")]
Examples = Annotated[int, typer.Option(help="With --retrieve: how many real transitions each prompt shows.")]
ExamplesWhen = Annotated[str | None, typer.Option(
    help="When prompts show retrieved transitions: every-step, no-base (only where the session has nothing "
         "to copy from yet: its first turn, a tool's first call), or kept (where first retrieved, kept there after: "
         "a step costs only its new tokens). Default: as the model's manifest says.",
    show_default=False)]
_DECLARED = {"model": Model, "base_url": BaseUrl, "api_key": ApiKey, "temperature": Temperature, "seed": Seed,
             "max_tokens": MaxTokens, "prompts_dir": PromptsDir, "no_cache": NoCache, "timeout": Timeout,
             "retries": Retries, "guard": Guard, "edits": Edits, "retrieve": Retrieve, "no_retrieve": NoRetrieve,
             "examples": Examples, "examples_when": ExamplesWhen}
INTERACTIVE = {"timeout": 30.0, "retries": 1}
"""Server patience for commands a person waits on (simulate, shell): a hung server fails in about a minute."""


EnvOption = Annotated[list[str] | None, typer.Option(help="Environment option KEY=VALUE (JSON or text), "
                                                  "e.g. preset=memory for mcp.")]


def env_options(items: list[str] | None) -> dict[str, Any]:
    """``--env-option KEY=VALUE`` items as keyword options: JSON values as parsed, others as text, a bare
    KEY as True."""
    options: dict[str, Any] = {}
    for item in items or []:
        key, _, value = item.partition("=")
        try:
            options[key] = json.loads(value) if value else True
        except json.JSONDecodeError:
            options[key] = value  # a plain string: --env-option preset=memory
    return options


def _helped(name: str, help_text: str | None) -> Any:
    """An option's declared annotation, with its help text replaced where a command says more."""
    if help_text is None:
        return _DECLARED[name]
    kind, option = _DECLARED[name].__origin__, _DECLARED[name].__metadata__[0]
    return Annotated[kind, typer.Option(*option.param_decls, help=help_text, envvar=option.envvar)]


def model_options(*, exclude: tuple[str, ...] = (), helps: dict[str, str] | None = None,
                  **defaults: Any) -> Callable[[F], F]:
    """Give a typer command the model options (less ``exclude``; ``defaults`` override ModelOptions',
    ``helps`` their help text). The command takes them as one keyword parameter, ``options: ModelOptions``."""
    names = [f.name for f in fields(ModelOptions) if f.name not in exclude]
    base = ModelOptions(**defaults)

    def decorate(command: F) -> F:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != "options"]
        added = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=getattr(base, n),
                                   annotation=_helped(n, (helps or {}).get(n))) for n in names]

        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            chosen = {n: kwargs.pop(n) for n in names if n in kwargs}
            return command(*args, options=ModelOptions(**{**vars(base), **chosen}), **kwargs)

        wrapper.__signature__ = signature.replace(parameters=[  # type: ignore[attr-defined]
            *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own), *added])
        return wrapper  # type: ignore[return-value]

    return decorate
