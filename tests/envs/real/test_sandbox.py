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
    assert ["--ro-bind", str(venv.resolve()), str(venv.resolve())] == argv[at + 2: at + 5]


def test_work_folder_is_the_only_writable_place(tmp_path):
    argv = Sandbox(tmp_path, mount_at="/home/user").argv("true")
    binds = [argv[i + 1: i + 3] for i, a in enumerate(argv) if a == "--bind"]
    assert binds == [[str(tmp_path.resolve()), "/home/user"]]
    assert "--unshare-net" in argv and argv[-2:] == ["--", "true"]
