"""The real search environment: a BM25 engine (bm25s) over real local document collections.

Tools: ``web_search`` (``query`` or ``queries``; ten numbered results per query with title, URL,
date and a snippet around the query's words), ``web_extractor`` (a URL's page as Markdown) and
``dict_memory`` (a per-episode key-value memory). The index is built once per collection and kept on
disk, so later processes load it instead of rebuilding it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from platformdirs import user_cache_dir

from lwm.envs.base import TextEnv
from lwm.envs.real.docsets import DOC_SETS
from lwm.envs.real.search_corpus import Document, load_sources, markdown
from lwm.registry import register
from lwm.types import Action, Context, Observation, Provenance

DEFAULT_SOURCES = ("python-docs", "man", "foldoc", "jargon")
RESULTS = 10
PAGE_LIMIT = 12_000
INDEX_FORMAT = 3
"""Bump when document extraction changes, so cached indexes are rebuilt."""

TOOLS: list[dict[str, Any]] = [
    {"name": "web_search", "description": "Search the web; returns 10 results per query.",
     "inputSchema": {"type": "object", "properties": {
         "query": {"type": "string", "description": "one query"},
         "queries": {"type": "array", "items": {"type": "string"}, "description": "several queries at once"}}}},
    {"name": "web_extractor", "description": "Fetch a web page and return its content as Markdown.",
     "inputSchema": {"type": "object", "required": ["url"], "properties": {
         "url": {"type": "string", "description": "the page's URL"},
         "goal": {"type": "string", "description": "what to look for on the page"}}}},
    {"name": "dict_memory", "description": "A key-value memory for notes across steps.",
     "inputSchema": {"type": "object", "required": ["operation"], "properties": {
         "operation": {"enum": ["add", "update", "retrieve", "retrieve_all", "remove", "remove_all"]},
         "key": {"type": "string"}, "value": {"type": "string"}}}},
]


class SearchIndex:
    """Documents plus a bm25s index over their titles and text."""

    def __init__(self, docs: list[Document], retriever: Any):
        self.docs, self.retriever = docs, retriever
        self.by_url = {d.url: d for d in docs}

    @classmethod
    def build(cls, docs: list[Document]) -> SearchIndex:
        import bm25s

        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize([f"{d.title} {d.title} {d.text}" for d in docs], stopwords="en",
                                       show_progress=False), show_progress=False)
        return cls(docs, retriever)

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.retriever.save(str(folder / "bm25"))
        tmp = folder / "docs.jsonl.tmp"
        with tmp.open("w", encoding="utf-8") as handle:
            for d in self.docs:
                handle.write(json.dumps(d.__dict__, ensure_ascii=False) + "\n")
        os.replace(tmp, folder / "docs.jsonl")

    @classmethod
    def load(cls, folder: Path) -> SearchIndex:
        import bm25s

        with (folder / "docs.jsonl").open(encoding="utf-8") as handle:
            docs = [Document(**json.loads(line)) for line in handle]
        return cls(docs, bm25s.BM25.load(str(folder / "bm25")))

    def search(self, query: str, k: int = RESULTS) -> list[Document]:
        import bm25s

        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        k = min(k, len(self.docs))
        ids, scores = self.retriever.retrieve(tokens, k=k, show_progress=False)
        return [self.docs[int(i)] for i, s in zip(ids[0], scores[0], strict=True) if s > 0]


_BUILDING = threading.Lock()


def corpus_index(sources: Sequence[str], limit_per_source: int | None = None,
                 cache_dir: str | None = None) -> SearchIndex:
    """The index of a collection: from this process's memory, the disk cache, or built and saved. One thread
    at a time: a batch's episodes start their environments in threads, and on a cold cache each would build."""
    with _BUILDING:
        return _corpus_index(tuple(sources), limit_per_source, cache_dir)


@cache
def _corpus_index(sources: tuple[str, ...], limit_per_source: int | None, cache_dir: str | None) -> SearchIndex:
    signature = json.dumps([INDEX_FORMAT, sources, limit_per_source, _source_stamp(sources)])
    root = Path(cache_dir) if cache_dir else Path(user_cache_dir("lwm")) / "search"
    folder = root / hashlib.sha256(signature.encode()).hexdigest()[:16]
    if (folder / "docs.jsonl").exists():
        return SearchIndex.load(folder)
    docs = [d for d in load_sources(sources, limit_per_source) if "/genindex" not in d.url]
    index = SearchIndex.build(docs)
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{folder.name}.", suffix=".tmp", dir=root))
    index.save(staging)
    try:
        os.rename(staging, folder)  # whole folder at once: parallel builders never mix their files
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)  # another process finished first; its copy is equal
    return index


def _source_stamp(sources: tuple[str, ...]) -> list[float]:
    """Installed package files change the collection: their modification times are in the cache key (the
    indexed doc sets' folders too, so an upgraded doc package rebuilds its index)."""
    paths = [DOC_SETS["python-docs"].root, Path("/usr/share/man/man2"), Path("/usr/share/man/man7"),
             Path("/usr/share/dictd"), *(DOC_SETS[s].root for s in sources if s in DOC_SETS)]
    return [p.stat().st_mtime if p.exists() else 0.0 for p in paths]


def snippet(doc: Document, query: str, width: int = 240) -> str:
    words = [w for w in re.findall(r"\w+", query.lower()) if len(w) > 2]
    text = re.sub(r"\s+", " ", doc.text)
    lower = text.lower()
    hits = [lower.find(w) for w in words if lower.find(w) >= 0]
    start = max(0, min(hits) - width // 3) if hits else 0
    piece = text[start: start + width]
    if start:
        piece = "..." + piece.split(" ", 1)[-1]
    return piece.rsplit(" ", 1)[0] + "..." if start + width < len(text) else piece


@register("env", "search")
class SearchEnv(TextEnv):
    def __init__(self, context: Context | None = None, *, sources: tuple[str, ...] | list[str] = DEFAULT_SOURCES,
                 limit_per_source: int | None = None, cache_dir: str | None = None,
                 render_mode: str | None = None):
        self.sources, self.limit_per_source, self.cache_dir = tuple(sources), limit_per_source, cache_dir
        self.memory: dict[str, str] = {}
        self.index: SearchIndex | None = None
        super().__init__("search", (context or Context()).model_copy(update={"tools": TOOLS}), render_mode)

    def provenance(self) -> Provenance:
        documents = len(self.index.docs) if self.index else None
        return Provenance(source="real", environment="search:bm25s",
                          extra={"sources": list(self.sources), "documents": documents})

    def initial_observation(self, seed: int | None, options: dict[str, Any]) -> str:
        self.index = corpus_index(self.sources, self.limit_per_source, self.cache_dir)
        self.memory = {}
        self.trajectory = self._new_trajectory()
        return self.context.initial_state or ""

    def transition(self, action: Action) -> Observation:
        name, args = action.content["name"], action.content["arguments"]
        text = getattr(self, f"_{name}")(**args)
        return Observation(content=text, metadata={"tool": name, "tool_error": text.startswith("Error")})

    # --- tools ---------------------------------------------------------------------------------
    def _web_search(self, query: str | None = None, queries: list[str] | None = None, **_: Any) -> str:
        assert self.index is not None, "reset() first"
        blocks = []
        for q in ([query] if query else []) + list(queries or []):
            hits = self.index.search(q)
            if not hits:
                blocks.append(f"No results found for '{q}'. Try a more general query.")
                continue
            lines = [f"A search for '{q}' found {len(hits)} results:", "", "## Web Results"]
            for n, doc in enumerate(hits, start=1):
                lines += [f"{n}. [{doc.title}]({doc.url})", f"Date: {doc.date or 'N/A'}", snippet(doc, q), ""]
            blocks.append("\n".join(lines).rstrip())
        return "\n=======\n".join(blocks)

    def _web_extractor(self, url: str, goal: str | None = None, **_: Any) -> str:
        assert self.index is not None, "reset() first"
        doc = self.index.by_url.get(url.strip())
        if doc is None:
            return f"Error: failed to fetch {url}: 404 Not Found"
        page = markdown(doc)
        return page if len(page) <= PAGE_LIMIT else page[:PAGE_LIMIT] + "\n\n[... page truncated]"

    def _dict_memory(self, operation: str, key: str | None = None, value: Any = None, **_: Any) -> str:
        if operation == "retrieve_all":
            return json.dumps(self.memory, ensure_ascii=False, indent=2) if self.memory else "Memory is empty."
        if operation == "remove_all":
            count, self.memory = len(self.memory), {}
            return f"Removed all {count} entries."
        if key is None:
            return f"Error: operation '{operation}' needs a key"
        exists = key in self.memory
        if operation == "add":
            if exists:
                return f"Error: key '{key}' already exists; use update to change it"
            self.memory[key] = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            return f"Added '{key}'."
        if not exists:
            return f"Error: key '{key}' not found"
        if operation == "update":
            self.memory[key] = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            return f"Updated '{key}'."
        if operation == "retrieve":
            return self.memory[key]
        del self.memory[key]
        return f"Removed '{key}'."
