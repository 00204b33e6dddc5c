"""A disk cache of model answers in SQLite, so that repeating a call costs nothing.

The key is a hash of the model name, the exact messages and the sampling settings. Calls that are
meant to vary (temperature above zero and no seed) are never cached. WAL mode lets several processes
(a bench run and a shell, say) share one file.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import threading
import time
from functools import lru_cache
from pathlib import Path

from filelock import FileLock
from platformdirs import user_cache_dir

from lwm.backends.base import GenerateConfig, Generation, Message

_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS generations (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
    "value TEXT NOT NULL, created REAL NOT NULL)",
]


def cache_root() -> Path:
    """lwm's cache folder (answers, converted models, retrieval indexes): ``LWM_CACHE_DIR`` or the user's cache."""
    return Path(os.environ.get("LWM_CACHE_DIR") or user_cache_dir("lwm"))


def default_cache_path() -> Path:
    return cache_root() / "generations.sqlite"


@lru_cache(maxsize=65536)
def _digest(text: str) -> bytes:
    """Per-message digests, memoized: an episode re-sends the same history strings at every step."""
    return hashlib.sha256(text.encode("utf-8")).digest()


def cache_key(model: str, messages: list[Message], config: GenerateConfig) -> str:
    # A greedy answer does not depend on the seed: episodes seeded apart still share it.
    # Settings added later are left out at their defaults, so earlier keys stay valid.
    exclude = ({"seed"} if config.temperature == 0 else set()) | (set() if config.json_only else {"json_only"}) | \
        (set() if not config.stop_loops else {"stop_loops"})
    settings = config.model_dump(exclude=exclude)
    key = hashlib.sha256(json.dumps([model, settings]).encode("utf-8"))
    key.update(b"".join(m["role"].encode() + _digest(m["content"]) for m in messages))
    return key.hexdigest()


class GenerationCache:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Switching a fresh database to WAL takes a lock SQLite does not wait for: processes opening the
        # same new cache at once got "database is locked". One at a time, across processes, for the setup.
        with FileLock(f"{self.path}.lock"):
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            for statement in _SCHEMA:
                self._db.execute(statement)
        self._lock = threading.Lock()

    @classmethod
    def usable(cls, path: str | Path | None = None) -> GenerationCache | None:
        """The cache, or None (said in one line) where its folder cannot be written: a read-only cache must not
        stop a run, only its caching."""
        try:
            return cls(path)
        except (OSError, sqlite3.Error) as exc:
            where = Path(path) if path else default_cache_path()
            print(f"lwm: answers are not cached: {where} cannot be opened ({type(exc).__name__}: {exc}); "
                  "set LWM_CACHE_DIR to a writable folder", file=sys.stderr)
            return None

    def get(self, key: str) -> Generation | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM generations WHERE key = ?", (key,)).fetchone()
        return Generation.model_validate_json(row[0]) if row else None

    def put(self, key: str, model: str, generation: Generation) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO generations VALUES (?, ?, ?, ?)",
                             (key, model, generation.model_dump_json(), time.time()))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM generations").fetchone()[0]

    def close(self) -> None:
        self._db.close()
