"""Real transitions retrieved per step: the nearest (action, observation before, observation after) of the
corpus, shown to the world model as examples, so it copies real facts and formats instead of recalling them.

``TransitionIndex.build(trajectories)`` indexes every turn of a trajectory store with bm25s, one index per
domain, over the action and the end of the observation before it. A tool call (an action with a ``name``)
is only shown calls of the same tool: another server's result teaches a made-up error, not a fact.
Evaluation must never see what it is scored on: an index is built from the training side of a split
(``exclude_sources`` drops held-out sources at build time too), and each search leaves out the session's own
trajectory and any source it is told to. ``TransitionIndex.cached(paths, folder)`` builds once into a folder
keyed by the inputs and reuses it; a killed build leaves no index behind (each domain's part is written to a
temporary name, then renamed), and a rerun builds only the parts that are missing.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import shutil
import sys
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lwm.runfolder import digest
from lwm.types import Trajectory

BEFORE_CHARS = 300
"""How much of the observation before an example's action the prompt shows (its end: where a terminal's
cursor, the result of the last call, stands)."""
AFTER_CHARS = 700
"""How much of an example's observation after the action the prompt shows."""
QUERY_BEFORE_CHARS = 400
FORMAT = 2
_NO_TOOL = ""
_FENCE = re.compile(r"```[a-z]*\n(.*?)\n```", re.DOTALL)


@dataclass(frozen=True)
class Transition:
    domain: str
    source: str
    trajectory: str
    turn: int
    """1-based index of the turn in its trajectory."""
    action: str
    before: str
    after: str


@functools.lru_cache(maxsize=65536)  # a session's earlier turns are looked at again at every step
def action_text(rendered: str) -> str:
    """The action itself from a rendered turn (``### Turn k`` / ``**Action:**`` and a code fence)."""
    found = _FENCE.search(rendered)
    return found.group(1) if found else rendered


@functools.lru_cache(maxsize=65536)
def tool_name(action: str) -> str | None:
    """The tool an action calls (a JSON object with a ``name``), or None for keys, code and commands."""
    text = action.strip()
    if not text.startswith("{"):
        return None
    try:
        call = json.loads(text)
    except ValueError:
        return None
    name = call.get("name") if isinstance(call, dict) else None
    return name if isinstance(name, str) and name else None


def transitions(trajectories: Iterable[Trajectory], exclude_sources: Collection[str] = ()) -> list[Transition]:
    from lwm.data.sources import source_of
    from lwm.domains import get_domain

    out = []
    for trajectory in trajectories:
        source = source_of(trajectory)
        if source in exclude_sources:
            continue
        domain = get_domain(trajectory.domain)
        before = str(trajectory.context.initial_state or "")
        for k, turn in enumerate(trajectory.turns, start=1):
            out.append(Transition(trajectory.domain, source, trajectory.id, k, domain.format_action(turn.action),
                                  before, turn.observation.content))
            before = turn.observation.content
    return out


def _query(action: str, before: str) -> str:
    return f"{action}\n{before[-QUERY_BEFORE_CHARS:]}"


class TransitionIndex:
    """Per-domain bm25s indexes over real transitions."""

    def __init__(self, parts: dict[str, tuple[list[Transition], Any]], inputs: Sequence[str] = ()):
        self.parts = parts
        self.inputs = list(inputs)
        """Digests of the files it was built from (a run records them)."""
        self._columns: dict[str, dict[str, Any]] = {}  # per domain: each transition's tool and source

    def _mask(self, domain: str, tool: str | None, exclude_sources: Collection[str]) -> Any:
        """A 0/1 weight per transition of ``domain``: 1 where it may be shown (calls the tool ``tool`` when one
        is named; not from an excluded source, so that a source's many near-copies cannot fill the candidates
        and leave nothing). None: no restriction; an all-zero mask: nothing may be shown."""
        import numpy as np

        if tool is None and not exclude_sources:
            return None
        if domain not in self._columns:
            items = self.parts[domain][0]
            self._columns[domain] = {"tools": np.array([tool_name(t.action) or _NO_TOOL for t in items], dtype=object),
                                   "sources": np.array([t.source for t in items], dtype=object)}
        columns = self._columns[domain]
        mask = np.ones(len(columns["tools"]), dtype=np.float32)
        if tool is not None:
            mask *= columns["tools"] == tool
        if exclude_sources:
            mask *= ~np.isin(columns["sources"], list(exclude_sources))
        return mask

    def __len__(self) -> int:
        return sum(len(items) for items, _ in self.parts.values())

    @staticmethod
    def _index(items: list[Transition]) -> Any:
        import bm25s

        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize([_query(t.action, t.before) for t in items], stopwords=None,
                                       show_progress=False), show_progress=False)
        return retriever

    @classmethod
    def build(cls, trajectories: Iterable[Trajectory], exclude_sources: Collection[str] = ()) -> TransitionIndex:
        return cls.of(transitions(trajectories, exclude_sources))

    @classmethod
    def of(cls, items: Iterable[Transition]) -> TransitionIndex:
        """An index of ``items`` in memory, one part per domain."""
        by_domain: dict[str, list[Transition]] = {}
        for t in items:
            by_domain.setdefault(t.domain, []).append(t)
        return cls({domain: (part, cls._index(part)) for domain, part in by_domain.items()})

    def search(self, domain: str, action: str, before: str, k: int = 2, *,
               exclude_trajectories: Collection[str] = (), exclude_sources: Collection[str] = ()) -> list[Transition]:
        """The ``k`` nearest transitions of ``domain`` to ``action`` after ``before``, leaving out the given
        trajectories and sources (at most one example per trajectory: variety over near-copies). A tool call
        is shown calls of the same tool only, or nothing when the index has none."""
        import bm25s

        part = self.parts.get(domain)
        if part is None or k <= 0:
            return []
        items, retriever = part
        mask = self._mask(domain, tool_name(action), exclude_sources)
        if mask is not None and not mask.any():
            return []
        tokens = bm25s.tokenize([_query(action, before)], stopwords=None, show_progress=False)
        if not tokens.vocab:
            return []
        ids, scores = retriever.retrieve(tokens, k=min(len(items), max(50, 10 * k)), show_progress=False,
                                         weight_mask=mask)
        found: list[Transition] = []
        seen: set[str] = set()
        for i, score in zip(ids[0], scores[0], strict=True):
            t = items[int(i)]
            if score <= 0 or t.trajectory in exclude_trajectories or t.source in exclude_sources \
                    or t.trajectory in seen:
                continue
            seen.add(t.trajectory)
            found.append(t)
            if len(found) == k:
                break
        return found

    # --- on disk -----------------------------------------------------------------------------------
    def save(self, folder: Path) -> None:
        for domain, (items, retriever) in self.parts.items():
            _save_part(folder, domain, items, retriever)

    @classmethod
    def load(cls, folder: Path) -> TransitionIndex:
        import bm25s

        parts = {}
        for part in sorted(p for p in folder.iterdir() if p.is_dir() and (p / "transitions.jsonl").is_file()):
            manifest = json.loads((part / "manifest.json").read_text())
            if digest(part / "transitions.jsonl") != manifest["digest"]:  # a file cut at a line boundary still loads
                raise ValueError(f"{part / 'transitions.jsonl'} is not the file its index was built with")
            with (part / "transitions.jsonl").open(encoding="utf-8") as handle:
                items = [Transition(**json.loads(line)) for line in handle]
            retriever = bm25s.BM25.load(str(part / "bm25"))
            if not len(items) == manifest["count"] == retriever.scores["num_docs"]:
                raise ValueError(f"{part}: {len(items):,} transitions, {retriever.scores['num_docs']:,} in the index "
                                 f"and {manifest['count']:,} in its manifest")
            parts[part.name] = (items, retriever)
        return cls(parts)

    @classmethod
    def cached(cls, paths: Sequence[Path], folder: Path, exclude_sources: Collection[str] = (),
               progress: Any = None) -> TransitionIndex:
        """The index of ``paths`` (trajectory files or collections, or transitions files that ``lwm data
        transitions`` wrote), less ``exclude_sources``, in ``folder``/<key>: built where missing, domain by
        domain, and reused after. ``progress(domain, seconds)`` hears of each part built."""

        inputs = [digest(Path(p)) for p in paths]
        key = hashlib.sha256(json.dumps({"format": FORMAT, "exclude": sorted(exclude_sources),
                                         "inputs": inputs}).encode())
        root = Path(folder) / key.hexdigest()[:16]
        try:
            try:
                index = cls._cached_at(root, paths, exclude_sources, progress)
            except Exception as exc:  # noqa: BLE001 - truncated, foreign or half-deleted: rebuilt once
                if not root.exists():  # nothing of the index was there: the inputs or the folder are at fault
                    raise
                print(f"lwm: the retrieval index in {root} is unreadable ({type(exc).__name__}: {exc}); "
                      "rebuilding it", file=sys.stderr)
                shutil.rmtree(root, ignore_errors=True)
                index = cls._cached_at(root, paths, exclude_sources, progress)
        except OSError as exc:  # a cache that cannot be written: the index is built in memory, every run
            print(f"lwm: the retrieval index is built in memory: {root} cannot be written ({exc}); set "
                  "LWM_CACHE_DIR to a writable folder to keep it", file=sys.stderr)
            index = cls.of(t for p in paths for t in _read_any(Path(p), exclude_sources))
        return cls(index.parts, inputs)

    @classmethod
    def _cached_at(cls, root: Path, paths: Sequence[Path], exclude_sources: Collection[str],
                   progress: Any) -> TransitionIndex:
        done = root / "domains.json"  # written last: every part is there
        if done.is_file() and all((root / d / "transitions.jsonl").is_file() for d in json.loads(done.read_text())):
            return cls.load(root)
        items = [t for p in paths for t in _read_any(Path(p), exclude_sources)]
        domains = sorted({t.domain for t in items})
        by_domain: dict[str, list[Transition]] = {}
        for t in items:
            if not (root / t.domain / "transitions.jsonl").is_file():
                by_domain.setdefault(t.domain, []).append(t)
        for domain, part in by_domain.items():
            started = time.perf_counter()
            _save_part(root, domain, part, cls._index(part))
            if progress is not None:
                progress(domain, time.perf_counter() - started)
        if root.is_dir():
            done.write_text(json.dumps([d for d in domains if (root / d / "transitions.jsonl").is_file()]))
        return cls.load(root) if root.is_dir() else cls({})


@functools.cache
def packaged_index(path: Path) -> TransitionIndex:
    """The index of a packaged model's transitions file, built into lwm's cache on first use (said on stderr)
    and loaded from there after; one copy per process."""
    import sys

    from lwm.cache import cache_root

    built: list[float] = []
    index = TransitionIndex.cached([path], cache_root() / "retrieval", progress=lambda _, s: built.append(s))
    if built:
        print(f"lwm: first use of {path.name}: built its retrieval index ({len(index):,} transitions, "
              f"{sum(built):.1f} s) in {cache_root() / 'retrieval'}", file=sys.stderr)
    return index


# --- transitions files: a corpus's transitions without the rest of its trajectories ---------------------------
TRANSITIONS_SUFFIX = ".transitions.jsonl.xz"


def write_transitions(items: Iterable[Transition], path: Path) -> int:
    """``items`` as an xz-compressed JSONL file, each observation before cut to what a search or a prompt reads
    (its end): the index built from it is the one built from the trajectories, at a fraction of the size (how
    lwm ships the transitions its packaged model retrieves). Returns the count."""
    import lzma

    count = 0
    staging = path.with_name(path.name + ".tmp")
    with lzma.open(staging, "wt", encoding="utf-8", preset=9) as handle:
        for t in items:
            row = asdict(t) | {"before": t.before[-max(BEFORE_CHARS, QUERY_BEFORE_CHARS):]}
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    staging.replace(path)
    return count


def read_transitions(path: Path) -> list[Transition]:
    import lzma

    opener = lzma.open if path.name.endswith(".xz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        try:
            return [Transition(**json.loads(line)) for line in handle if line.strip()]
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}: not a transitions file ({exc})") from None


def _read_any(path: Path, exclude_sources: Collection[str]) -> list[Transition]:
    if path.name.endswith((TRANSITIONS_SUFFIX, ".transitions.jsonl")):
        return [t for t in read_transitions(path) if t.source not in exclude_sources]
    from lwm.data.store import read_trajectories

    return transitions(read_trajectories(path), exclude_sources)


def _save_part(folder: Path, domain: str, items: list[Transition], retriever: Any) -> None:
    """One domain's part, written under a temporary name and renamed: a killed build leaves no half part."""
    final = folder / domain
    staging = folder / f".{domain}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    retriever.save(str(staging / "bm25"))
    with (staging / "transitions.jsonl").open("w", encoding="utf-8") as handle:
        for t in items:
            handle.write(json.dumps(asdict(t), ensure_ascii=False) + "\n")
    (staging / "manifest.json").write_text(json.dumps({"count": len(items),
                                                        "digest": digest(staging / "transitions.jsonl")}))
    shutil.rmtree(final, ignore_errors=True)
    staging.rename(final)
