"""One typed JSONL file: rows read by id (a bad line named and skipped), rows appended one whole line
at a time, so a killed run loses at most the line it was writing and resumes by id.

Trajectories, benchmark samples, predictions and judgements are all kept this way.
"""

from __future__ import annotations

import json
import logging
import lzma
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from lwm.types import well_formed

log = logging.getLogger(__name__)
Row = TypeVar("Row", bound=BaseModel)


class JsonlFile(Generic[Row]):
    """``path`` holding one ``model`` per line, identified by its ``id`` field."""

    def __init__(self, path: str | Path, model: type[Row], *, exclude_none: bool = False, sync: bool = False):
        self.path = Path(path)
        self.model = model
        self.exclude_none = exclude_none  # rows other tools read, where a null would not mean "absent"
        self.sync = sync  # fsync each line: for rows that cost minutes to redo (episodes), not per-sample rows
        self._handle: IO[str] | None = None
        self._lock = threading.Lock()  # episodes of a batch finish in parallel threads and append together

    def __iter__(self) -> Iterator[Row]:
        return self.rows()

    def rows(self, problems: list[str] | None = None) -> Iterator[Row]:
        """Every readable row in file order; each unreadable line (cut by a kill, hand-edited, not this
        kind of row) is logged and, with ``problems``, named there as ``file:line: why``."""
        if not self.path.exists():
            return
        opened = lzma.open(self.path, "rt", encoding="utf-8", errors="replace") if self.path.suffix == ".xz" \
            else self.path.open(encoding="utf-8", errors="replace")  # a committed eval set is xz-compressed
        with opened as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    yield self.model.model_validate_json(line)
                except ValueError as exc:
                    message = f"{self.path}:{number}: skipped: {_why(exc)}"
                    if problems is None:
                        log.warning(message)
                    else:  # the caller says it, once
                        problems.append(message)

    def by_id(self, problems: list[str] | None = None) -> dict[str, Row]:
        """Rows by id (or by ``key``, where a row defines one); the last line of an id wins (a rerun's row
        replaces the earlier one)."""
        return {self.key(row): row for row in self.rows(problems)}

    def ids(self) -> set[str]:
        return set(self.by_id())

    def key(self, row: Row) -> str:
        """The row's id (or its ``key``, where the row defines one): what ``by_id`` files it under."""
        return str(getattr(row, "key", None) or row.id)  # type: ignore[attr-defined]

    def append(self, row: Row) -> str:
        """One whole line, flushed (and synced with ``sync``): a kill leaves at most one partial line, which
        readers skip. Safe to call from several threads. Returns the line as written."""
        line = self._line(row)
        with self._lock:
            self._append(line)
        return line

    def _line(self, row: Row) -> str:
        """``row`` as one JSON line; text that is not well-formed Unicode anywhere in it (a lone surrogate in a
        provenance field) is stored with U+FFFD in its place rather than losing the row."""
        try:
            return row.model_dump_json(exclude_none=self.exclude_none) + "\n"
        except PydanticSerializationError:
            plain = well_formed(row.model_dump(mode="json", exclude_none=self.exclude_none))
            return json.dumps(plain, ensure_ascii=False) + "\n"

    def _append(self, line: str) -> None:
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists() and self.path.stat().st_size:
                with self.path.open("rb") as tail:
                    tail.seek(-1, os.SEEK_END)
                    cut = tail.read(1) != b"\n"
                if cut:  # end the line a kill cut short, so the next row starts on its own line
                    with self.path.open("ab") as handle:
                        handle.write(b"\n")
            self._handle = self.path.open("a", encoding="utf-8")
        self._handle.write(line)
        self._handle.flush()
        if self.sync:
            os.fsync(self._handle.fileno())

    def write_all(self, rows: Iterable[Row]) -> int:
        """Replace the file with ``rows`` (through a temporary file: a kill never leaves half of it)."""
        return _replace(self.path, (self._line(row) for row in rows))

    def reorder(self, keys: Iterable[str], written: dict[str, str] | None = None, *, only: bool = False) -> None:
        """Rewrite the file with its rows in the order of ``keys`` (rows finish out of order under concurrency);
        rows of keys not given keep their place after them, the last line of a key wins, unreadable lines go.
        ``written`` (key -> line, as ``append`` returned them) spares parsing the lines this run wrote, and with
        ``only`` (the file held nothing before them) spares reading the file at all."""
        if only and written is not None:
            lines = dict(written)
            _replace(self.path, [*(lines.pop(key) for key in keys if key in lines), *lines.values()])
            return
        if not self.path.exists():
            return
        known = {line: key for key, line in (written or {}).items()}
        lines: dict[str, str] = {}
        with self.path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key = known.get(line)
                if key is None:
                    try:
                        key = self.key(self.model.model_validate_json(line))
                    except ValueError:
                        continue  # a cut or foreign line: by_id skips it too
                lines.pop(key, None)
                lines[key] = line
        ordered = [lines.pop(key) for key in keys if key in lines]
        _replace(self.path, [*ordered, *lines.values()])

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None


def write_dicts(path: str | Path, rows: Iterable[dict[str, Any]]) -> int:
    """Replace ``path`` with ``rows`` as JSON lines (plain dicts: training rows), through a temporary file as
    ``JsonlFile.write_all`` does; the number written."""
    return _replace(Path(path), (json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


def _replace(path: Path, lines: Iterable[str]) -> int:
    """Replace ``path`` with ``lines`` through a temporary file (a kill never leaves half of it); how many."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    count = 0
    with tmp.open("w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(line)
            count += 1
    os.replace(tmp, path)
    return count


def _why(exc: ValueError) -> str:
    """The first reason a line was refused, where it is (``turns.0.action: Field required``), not pydantic's
    "1 validation error for Trajectory" headline."""
    if isinstance(exc, ValidationError) and exc.errors():
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        return f"{where + ': ' if where else ''}{error['msg']}"[:200]
    return str(exc).splitlines()[0][:200]
