"""Synchronise on a condition, never on a fixed sleep: a loaded machine is slower, not different."""

import time


def wait_for(condition, seconds: float, every: float = 0.05) -> bool:
    """Poll ``condition`` until it holds or ``seconds`` pass; whether it held."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every)
    return bool(condition())
