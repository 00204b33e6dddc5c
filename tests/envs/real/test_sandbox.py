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
