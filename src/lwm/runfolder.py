"""A run folder's recorded settings: what its rows were made with, so a resumed run never mixes two runs.

Commands that resume (``lwm bench``, ``lwm agent eval``) append rows to a folder and skip the rows
already there. Rows made by another model, sampling or data must not be counted with them, so each
stage pins its settings in the folder's ``run.json`` on first use and a later run with other settings
is refused, naming what differs. ``set_aside`` is the way out that loses nothing: the old run's files
move to a dated subfolder.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

RUN_FILE = "run.json"


class SettingsChanged(ValueError):
    """The folder holds rows made with other settings than this run's."""


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def read_run(folder: Path) -> dict[str, Any]:
    path = folder / RUN_FILE
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SettingsChanged(f"{path} is unreadable ({exc}); move it away or use a new folder") from None


def update_run(folder: Path, **entries: Any) -> dict[str, Any]:
    """Merge ``entries`` into ``run.json`` (written whole, then renamed into place)."""
    run = {**read_run(folder), **entries}
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{RUN_FILE}.tmp"
    tmp.write_text(json.dumps(run, indent=2), encoding="utf-8")
    tmp.replace(folder / RUN_FILE)
    return run


def holds_rows(path: Path) -> bool:
    """Whether a stage's rows file has anything in it (then its settings must match to resume)."""
    return path.is_file() and path.stat().st_size > 0


def pin(folder: Path, stage: str, settings: dict[str, Any], *, has_rows: bool, way_out: str) -> None:
    """Record ``settings`` for ``stage`` in the folder, or check them against the recorded ones.

    ``has_rows``: the folder already holds this stage's rows; if it does but no settings were recorded
    (an older lwm made them), they cannot be vouched for either, and the run is refused as well.
    """
    settings = {**settings, "lwm": version("lwm")}
    recorded = read_run(folder).get(stage)
    if not has_rows:  # nothing to mix with: these settings are the folder's from now on
        if recorded is None or any(recorded.get(k) != v for k, v in settings.items()):
            update_run(folder, **{stage: {**settings, "started": now()}})
        return
    if recorded is None:
        raise SettingsChanged(f"{folder} holds {stage} results with no recorded settings (an older lwm made "
                              f"them), so they may not match this run; {way_out}")
    differ = [f"{k}: {recorded.get(k)!r} -> {v!r}" for k, v in settings.items() if recorded.get(k) != v]
    if differ:
        raise SettingsChanged(f"{folder} holds {stage} results made with other settings ({'; '.join(differ)}); "
                              f"{way_out}")


def finish(folder: Path, stage: str) -> None:
    """Stamp the stage's end time (its last completed run)."""
    run = read_run(folder)
    if stage in run:
        update_run(folder, **{stage: {**run[stage], "finished": now()}})


def set_aside(folder: Path, names: list[str]) -> Path | None:
    """Move the named files of an earlier run into ``folder/previous-<time>/``; returns that folder."""
    present = [folder / n for n in names if (folder / n).exists()]
    if not present:
        return None
    target = folder / f"previous-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    target.mkdir(parents=True, exist_ok=True)
    for path in present:
        shutil.move(str(path), target / path.name)
    return target


def digest(path: Path) -> str:
    """Content digest of a data file, or of a folder's ``*.jsonl`` files (names and bytes)."""
    h = hashlib.blake2b(digest_size=8)
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    for file in files:
        h.update(file.name.encode() + b"\0")
        with file.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()
