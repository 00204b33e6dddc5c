import shutil
import time
from pathlib import Path

import pytest

needs_sandbox = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed (make setup)")
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed (make setup)")


def processes_of(uid: int) -> list[str]:
    """Names of the live processes owned by ``uid`` (a sandbox's own uid when lwm runs as root)."""
    names = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                names.append((entry / "comm").read_text().strip())
        except OSError:
            pass
    return names


def wait_for(condition, seconds: float, every: float = 0.1) -> bool:
    """Poll ``condition`` until it holds or ``seconds`` pass; whether it held."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every)
    return bool(condition())
