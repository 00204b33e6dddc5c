import sys
import tempfile
from pathlib import Path

from lwm.envs.real.sandbox import Sandbox


def test_lwm_install_under_tmp_stays_visible_inside(monkeypatch, tmp_path):
    venv = Path(tempfile.mkdtemp(prefix="venv-"))  # under /tmp, which the sandbox replaces with a tmpfs
    monkeypatch.setattr(sys, "prefix", str(venv))
    argv = Sandbox(tmp_path).argv("true")
    at = argv.index("--tmpfs")
    assert argv[at: at + 2] == ["--tmpfs", "/tmp"]
    after_tmpfs = argv[at + 2:]
    kept = [after_tmpfs[i + 1] for i, a in enumerate(after_tmpfs) if a == "--ro-bind"]
    assert str(venv.resolve()) in kept  # mounted after the tmpfs, so it is visible on top of it


def test_work_folder_is_the_only_writable_place(tmp_path):
    argv = Sandbox(tmp_path, mount_at="/home/user").argv("true")
    binds = [argv[i + 1: i + 3] for i, a in enumerate(argv) if a == "--bind"]
    assert binds == [[str(tmp_path.resolve()), "/home/user"]]
    assert "--unshare-net" in argv and argv[-2:] == ["--", "true"]


def test_limits_come_as_an_environment_option_and_a_wrong_name_says_the_right_ones():
    """``--env-option 'limits={"disk_mb": 2048}'`` reaches an environment as a dict: changes to the defaults."""
    import pytest

    from lwm.envs.real.sandbox import DEFAULT_LIMITS, Limits

    assert Limits.of({"disk_mb": 2048, "episode_memory_mb": None}) == Limits(disk_mb=2048, episode_memory_mb=None)
    assert Limits.of(None) is DEFAULT_LIMITS and Limits.of(DEFAULT_LIMITS) is DEFAULT_LIMITS
    with pytest.raises(ValueError, match="unknown limit disk_gb; limits are memory_mb, .*disk_mb"):
        Limits.of({"disk_gb": 2})
    from lwm.envs.real import SWEEnv

    assert SWEEnv(limits={"disk_mb": 64}).limits.disk_mb == 64
