import shutil

import pytest

needs_sandbox = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed (make setup)")
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed (make setup)")
