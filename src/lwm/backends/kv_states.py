"""KV states of earlier prompts, for a llama.cpp model that serves several sessions in turn.

llama-cpp-python's own state cache saves the whole state after every answer: 0.1-0.7 s a step on the 2-core
box (36 MB of KV cells plus a 100 MB copy of the logits buffer), paid even by a single session, whose next
prompt extends the live context anyway. ``KVStates`` saves only when the live context is about to be
overwritten by a prompt that keeps less than half of it (another session, or a different sample), without the
logits buffer (sampling reads llama.cpp's own logits, and a restored state re-evaluates at least one token);
before each prompt it restores the saved state sharing the longest prefix, where that is longer than what the
live context shares. Least recently used states are dropped past ``capacity_bytes``.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from typing import Any

import numpy as np

RESTORE_MARGIN = 16
"""A saved state is restored only when it shares this many more tokens than the live context (a restore
copies the whole state; a few tokens are cheaper to evaluate)."""


def shared_prefix(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


class KVStates:
    def __init__(self, capacity_bytes: int):
        self.capacity = capacity_bytes
        self.states: OrderedDict[bytes, tuple[np.ndarray, Any]] = OrderedDict()
        self.saves = self.restores = 0

    @property
    def size(self) -> int:
        return sum(state.llama_state_size for _, state in self.states.values())

    def prepare(self, llm: Any, prompt: list[int]) -> int:
        """Make ``llm``'s context the best start for ``prompt``; returns the prompt tokens it already holds."""
        tokens = np.asarray(prompt, dtype=np.intc)
        live = np.asarray(llm.input_ids[:llm.n_tokens], dtype=np.intc)
        shared = shared_prefix(live, tokens)
        if len(live) and shared * 2 < len(live):
            self._save(llm, live)
        best, best_len = None, shared
        for key, (ids, _) in self.states.items():
            length = shared_prefix(ids, tokens)
            if length > best_len:
                best, best_len = key, length
        if best is not None and best_len >= shared + RESTORE_MARGIN:
            self.states.move_to_end(best)
            llm.load_state(self.states[best][1])
            self.restores += 1
            return best_len
        return shared

    def _save(self, llm: Any, live: np.ndarray) -> None:
        import llama_cpp

        key = live.tobytes()
        if key in self.states:
            self.states.move_to_end(key)
            return
        size = llama_cpp.llama_state_get_size(llm._ctx.ctx)
        buffer = (ctypes.c_uint8 * int(size))()
        written = int(llama_cpp.llama_state_get_data(llm._ctx.ctx, buffer, size))
        state = llama_cpp.LlamaState(
            input_ids=llm.input_ids.copy(), scores=np.zeros((1, llm.n_vocab()), dtype=np.single),
            n_tokens=llm.n_tokens, llama_state=ctypes.string_at(buffer, written), llama_state_size=written,
            seed=llm._seed)
        self.states[key] = (live.copy(), state)  # live is a view of the buffer llama.cpp writes next
        self.saves += 1
        while self.states and self.size > self.capacity:
            self.states.popitem(last=False)
