"""``ModelOptions``: a world model named by its spec, with how to reach it and how it samples; ``world_model()``,
the one way anything in lwm gets a WorldModel (as inspect_ai's ``get_model``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lwm.backends import DEFAULT_SPEC, Backend, GenerateConfig
from lwm.worldmodel import WorldModel


@dataclass(frozen=True)
class ModelOptions:
    """Which model, how to reach it, and how it samples: the one way lwm builds a WorldModel from a spec and
    options (the CLI's model options, served environments, the gym factories, agent runs in the simulator)."""

    model: str | Backend = DEFAULT_SPEC
    """A spec (``embedded:lwm-mini``, ``openai:NAME``, ...) or a ready backend."""
    base_url: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 512
    prompts_dir: Path | None = None
    no_cache: bool = False
    timeout: float = 300.0
    retries: int = 5
    guard: bool = False
    edits: bool | None = None
    retrieve: list[Path] | None = None
    no_retrieve: bool = False
    examples: int = 2
    examples_when: str | None = None

    def world_model(self, concurrency: int | None = None) -> WorldModel:
        """The WorldModel these options describe (``concurrency``: requests in flight, for servers)."""
        config = GenerateConfig(temperature=self.temperature, seed=self.seed, max_tokens=self.max_tokens)
        return WorldModel(self.model, config=config, cache=not self.no_cache, prompts_dir=self.prompts_dir,
                          base_url=self.base_url, api_key=self.api_key, concurrency=concurrency,
                          timeout=self.timeout, max_retries=self.retries, guard=self.guard, edits=self.edits,
                          retriever=self.retriever(), examples=self.examples,
                          examples_when=self.examples_when)

    def retriever(self) -> Any:
        """The transition index of ``--retrieve`` (built once into the cache, said so); False for
        ``--no-retrieve``; None: the model's own, if it has one."""
        if self.no_retrieve:
            return False
        if not self.retrieve:
            return None
        import sys

        from lwm.cache import cache_root
        from lwm.retrieval import TransitionIndex

        folder = cache_root() / "retrieval"

        def said(domain: str, seconds: float) -> None:
            print(f"lwm: indexed the {domain} transitions of --retrieve in {seconds:.1f} s", file=sys.stderr)

        return TransitionIndex.cached([Path(p) for p in self.retrieve], folder, progress=said)


def world_model(model: str | Backend | WorldModel | ModelOptions | None = None, *, concurrency: int | None = None,
                **options: Any) -> WorldModel:
    """A WorldModel from a spec, a backend, ``ModelOptions`` or a WorldModel (returned as it is), with
    ``options`` (``ModelOptions``' fields) over the given ones; ``concurrency``: requests in flight, for servers.
    Every layer that needs a world model (serve, the gym factories, agent runs in the simulator, bench) takes
    one of these and calls this."""
    if isinstance(model, WorldModel):
        if options:
            raise ValueError(f"a ready WorldModel takes no options (got {', '.join(sorted(options))}): give its "
                             "spec or ModelOptions instead")
        return model
    chosen = model if isinstance(model, ModelOptions) else ModelOptions(DEFAULT_SPEC if model is None else model)
    return replace(chosen, **options).world_model(concurrency)
