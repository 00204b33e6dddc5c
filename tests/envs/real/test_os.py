"""The real OS environment: Xvfb + AT-SPI + mousepad, driven by sandboxed Python code."""

import shutil
from pathlib import Path

import pytest

from lwm.collect.presets import OS_APPS
from lwm.data.sources import source_of
from lwm.envs.real.os import DesktopUnavailable, OSEnv, check_desktop
from lwm.envs.real.process import processes_of
from tests.envs.real.conftest import wait_for

try:
    check_desktop()
    HAVE_DESKTOP = True
except DesktopUnavailable:
    HAVE_DESKTOP = False
pytestmark = pytest.mark.skipif(not HAVE_DESKTOP, reason="xvfb/at-spi/pyatspi not installed (make setup)")

TYPE = "import pyautogui\npyautogui.FAILSAFE = False\npyautogui.click(300, 200)\npyautogui.write('{}', interval=0.01)"


@pytest.fixture(scope="module")
def env():
    e = OSEnv(apps=("mousepad",))
    yield e
    e.close()


@pytest.mark.parametrize("app", OS_APPS)
def test_each_corpus_app_shows_in_the_tree(app):
    if not shutil.which(app):
        pytest.skip(f"{app} not installed (setup)")
    with OSEnv(apps=(app,)) as other:
        obs, _ = other.reset()
        assert f"application '{app}'" in obs and "frame '" in obs
        assert source_of(other.trajectory) == f"os:{app}"


def test_the_tree_shows_the_app_and_typing_changes_it(env):
    obs, _ = env.reset()
    assert obs.startswith("application 'mousepad'\n  frame 'Untitled 1 - Mousepad' (0, 0, 640, 480)")
    assert "menu 'File'" in obs
    obs, *_ = env.step(TYPE.format("hello desktop"))
    assert "text='hello desktop'" in obs and "frame '*Untitled 1 - Mousepad'" in obs


def test_printed_output_and_tracebacks_come_first(env):
    env.reset()
    obs, *_ = env.step("print(6 * 7)")
    assert obs.startswith("Output:\n42\n\napplication 'mousepad'")
    obs, *_ = env.step("1 / 0")
    assert obs.startswith("Output:\nTraceback (most recent call last):") and "ZeroDivisionError" in obs


def test_lines_that_are_no_answer_on_the_desktops_channel_are_passed_over(env):
    """Something inside the sandbox may write to the desktop helper's stdout (a process there that holds it):
    a line that is no answer to lwm's request (not JSON, or another request's id) must not become the
    observation or an exception. Written here through the sandbox process's own end of the channel."""
    env.reset()
    with open(f"/proc/{env.desktop.pid}/fd/1", "w") as channel:
        channel.write('not json\n{"id": 99, "tree": "fake"}\n')
    obs, *_ = env.step("print(6 * 7)")
    assert obs.startswith("Output:\n42\n\napplication 'mousepad'") and env.stray_lines == 2
    obs, *_ = env.step("print(7 * 7)")
    assert obs.startswith("Output:\n49\n\napplication 'mousepad'")


def test_actions_are_sandboxed(env):
    env.reset()
    obs, *_ = env.step("import pathlib\npathlib.Path('notes.txt').write_text('x')\nprint(pathlib.Path.cwd())\n"
                       "open('/usr/lwm-probe', 'w')")
    assert obs.startswith("Output:\n/home/user\n") and "Read-only file system: '/usr/lwm-probe'" in obs
    assert (env.workdir / "notes.txt").read_text() == "x"
    obs, *_ = env.step("import urllib.request\nurllib.request.urlopen('http://127.0.0.1:9', timeout=2)")
    assert "URLError" in obs


def test_close_stops_the_desktop():
    e = OSEnv()
    e.reset()
    desktop, workdir, uid = e.desktop, e.workdir, e.sandbox.uid
    if uid is not None:  # lwm runs as root: the whole desktop runs as the episode's own uid
        assert {"Xvfb", "mousepad", "dbus-daemon"} <= set(processes_of(uid))
        # ... in the sandbox's mount namespace, where the root is read-only: whatever an action makes the
        # app do (save as /root/x), it cannot write outside the episode's folder.
        pid = next(p for p in Path("/proc").iterdir() if p.name.isdigit() and p.stat().st_uid == uid
                   and (p / "comm").read_text().strip() == "mousepad")
        assert (pid / "ns/mnt").stat().st_ino != Path("/proc/self/ns/mnt").stat().st_ino
        root = next(line.split() for line in (pid / "mountinfo").read_text().splitlines() if line.split()[4] == "/")
        assert "ro" in root[5].split(",")
    e.close()
    assert desktop.poll() is not None and not workdir.exists()
    if uid is not None:
        assert wait_for(lambda: not processes_of(uid), 5)


def test_an_episode_reaches_its_own_display_only():
    a, b = OSEnv(), OSEnv()
    host_x11 = sorted(p.name for p in Path("/tmp/.X11-unix").iterdir()) if Path("/tmp/.X11-unix").exists() else []
    try:
        a.reset()
        b.reset()
        obs, *_ = a.step(TYPE.format("only in a") + f"\nimport os\nprint(os.path.exists({str(b.workdir)!r}), "
                         "sorted(os.listdir('/tmp/.X11-unix')))")
        assert "text='only in a'" in obs and "Output:\nFalse ['X0']" in obs
        assert "only in a" not in b.tree()
    finally:
        a.close()
        b.close()
    now = sorted(p.name for p in Path("/tmp/.X11-unix").iterdir()) if Path("/tmp/.X11-unix").exists() else []
    assert now == host_x11  # nothing written into the host's X socket folder
