import shutil
import time

import pytest

needs_sandbox = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed (make setup)")
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed (make setup)")


def wait_for(condition, seconds: float, every: float = 0.1) -> bool:
    """Poll ``condition`` until it holds or ``seconds`` pass; whether it held."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every)
    return bool(condition())
