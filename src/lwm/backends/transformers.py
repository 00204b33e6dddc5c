"""A local Hugging Face model folder through transformers (the ``transformers`` extra).

For checkpoints straight out of training before they are converted to GGUF. Loads from the folder
only (``local_files_only``): no hub access. Generation runs in a worker thread, one call at a time.
"""

from __future__ import annotations

import asyncio
import threading
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from lwm.backends.base import BackendError, BackendInfo, GenerateConfig, Generation, Message
from lwm.registry import register


@register("backend", "transformers")
class TransformersBackend:
    def __init__(self, path: str, *, context_window: int | None = None, compact: bool = False):
        self.path = Path(path).expanduser()
        if not self.path.is_dir():
            raise BackendError(f"transformers model folder not found: {self.path}")
        self.name = f"transformers:{self.path.name}"
        self.compact_prompts = compact
        self._context_window = context_window
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @classmethod
    def from_spec(cls, model: str | None, **options: Any) -> TransformersBackend:
        if not model:
            raise ValueError("the transformers backend needs a folder: transformers:/path/to/model")
        return cls(model, **options)

    @classmethod
    def info(cls) -> BackendInfo:
        usable = find_spec("transformers") is not None and find_spec("torch") is not None
        detail = "local Hugging Face folder" if usable else "needs: pip install 'lwm[transformers]'"
        return BackendInfo(name="transformers", usable=usable, detail=detail, example="transformers:/path/to/model")

    def _ensure(self) -> None:
        if self._model is not None:
            return
        try:
            from lwm.train.common import load_for_inference
        except ImportError as exc:
            raise BackendError("the transformers backend needs: pip install 'lwm[transformers]'") from exc
        # A LoRA folder from lwm train loads over its base, as hf:DIR policies do: one loader for both.
        self._model, self._tokenizer = load_for_inference(str(self.path))

    @property
    def context_window(self) -> int | None:
        if self._context_window is None and self._model is not None:
            return getattr(self._model.config, "max_position_embeddings", None)
        return self._context_window

    def _complete(self, messages: list[Message], config: GenerateConfig) -> Generation:
        import torch

        with self._lock:
            self._ensure()
            encoded = self._tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt",
                                                          return_dict=True)
            encoded = encoded.to(self._model.device)
            ids = encoded["input_ids"]
            if config.seed is not None:
                torch.manual_seed(config.seed)
            sampling = {"do_sample": True, "temperature": config.temperature} if config.temperature > 0 else \
                {"do_sample": False}
            if config.top_p is not None and config.temperature > 0:
                sampling["top_p"] = config.top_p
            with torch.no_grad():
                out = self._model.generate(ids, attention_mask=encoded["attention_mask"],
                                           max_new_tokens=config.max_tokens,
                                           pad_token_id=self._tokenizer.eos_token_id, **sampling)
            new = out[0, ids.shape[1]:]
            text = self._tokenizer.decode(new, skip_special_tokens=True)
        for stop in config.stop or ():
            text = text.split(stop, 1)[0]
        return Generation(text=text, prompt_tokens=int(ids.shape[1]), completion_tokens=int(new.shape[0]))

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Generation:
        return await asyncio.to_thread(self._complete, messages, config)

    def count_tokens(self, text: str) -> int:
        with self._lock:
            self._ensure()
            return len(self._tokenizer.encode(text, add_special_tokens=False))

    async def aclose(self) -> None:
        return None
