import shutil

import pytest

from tests.waiting import wait_for  # noqa: F401  (re-exported for the real-env tests)

needs_sandbox = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed (make setup)")
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed (make setup)")
