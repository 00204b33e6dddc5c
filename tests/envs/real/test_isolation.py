"""The sandbox's promises (docs/collection.md, "Threat model"), probed from inside each environment.

A probe runs inside terminal, swe and os the way an agent's code would, tries each escape the threat
model names (remount, mount, unshare, chroot, raw sockets, reading a canary secret from the environment
or from a file, the shadow file) and reports what happened as one JSON line.
"""

import json
import os
import re
import secrets
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from lwm.envs.real import SWEEnv, TerminalEnv
from lwm.envs.real.process import processes_of
from lwm.envs.real.sandbox import Limits, Sandbox
from tests.envs.real.conftest import needs_sandbox, needs_tmux, wait_for

pytestmark = needs_sandbox
ROOT = os.geteuid() == 0

PROBE = textwrap.dedent("""\
    import json, os, socket, subprocess
    def fails(cmd):
        return subprocess.run(cmd, shell=True, capture_output=True).returncode != 0
    r = {}
    r["remount"] = fails("mount -o remount,bind,rw / && echo x > TARGET")
    r["mount"] = fails("mount -t tmpfs none /mnt")
    r["unshare"] = fails("unshare -U -r true") and fails("unshare -m true")
    r["chroot"] = fails("/usr/sbin/chroot / true")
    try:
        socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        r["raw_socket"] = False
    except OSError:
        r["raw_socket"] = True
    seen = str(dict(os.environ))
    for pid in os.listdir("/proc"):
        try:
            seen += open(f"/proc/{pid}/environ", errors="replace").read()
        except OSError:
            pass
    r["env_secret_hidden"] = "CANARY" not in seen
    try:
        r["file_secret_hidden"] = "CANARY" not in open("SECRET_FILE").read()
    except OSError:
        r["file_secret_hidden"] = True
    try:
        r["shadow_hidden"] = open("/etc/shadow").read().strip() == ""
    except OSError:
        r["shadow_hidden"] = True
    status = open("/proc/self/status").read()
    r["no_caps"] = "CapEff:\\t0000000000000000" in status and "NoNewPrivs:\\t1" in status
    print("PROBE" + json.dumps(r, separators=(",", ":")) + "END")
""")


@pytest.fixture
def canary(monkeypatch, tmp_path):
    """A secret in lwm's environment and one in a file under the caller's home (root's, in CI)."""
    value = f"lwm-canary-{secrets.token_hex(8)}"
    monkeypatch.setenv("SECRET_TOKEN", value)
    secret_file = Path.home() / f".lwm-canary-{secrets.token_hex(4)}"
    secret_file.write_text(value)
    target = Path("/root" if ROOT else Path.home()) / f"lwm-escape-{secrets.token_hex(4)}"
    probe = PROBE.replace("CANARY", value).replace("SECRET_FILE", str(secret_file)).replace("TARGET", str(target))
    yield probe, target
    secret_file.unlink(missing_ok=True)
    assert not target.exists(), "the remount escape wrote on the host"


def verdict(text: str) -> dict:
    found = re.search(r"PROBE(\{.*?\})END", text.replace("\n", ""))
    assert found, text[-2000:]
    return json.loads(found.group(1))


def assert_contained(result: dict) -> None:
    escaped = [name for name, held in result.items() if not held]
    assert not escaped, f"escapes that worked: {escaped}"


@contextmanager
def swe_episode(**options):
    env = SWEEnv(**options)
    try:
        env.reset()
        yield env
    finally:
        env.close()


def bash(env: SWEEnv, command: str, **arguments) -> str:
    return env.step(json.dumps({"name": "bash", "arguments": {"command": command, **arguments}}))[0]


def test_swe_bash_cannot_escape(canary):
    probe, _ = canary
    with swe_episode() as env:
        env.step(json.dumps({"name": "write_file", "arguments": {"path": "probe.py", "content": probe}}))
        assert_contained(verdict(bash(env, "python3 probe.py")))


@needs_tmux
def test_terminal_cannot_escape(canary):
    probe, _ = canary
    env = TerminalEnv(width=200, height=50)
    try:
        env.reset()
        (env.workdir / "probe.py").write_text(probe)
        obs, *_ = env.step(json.dumps([{"keystrokes": "python3 probe.py\n", "duration": 0.5}]))
        assert wait_for(lambda: "END" in env.screen().replace("\n", ""), 20)
        assert_contained(verdict(env.screen()))
    finally:
        env.close()


def test_os_actions_cannot_escape(canary):
    from tests.envs.real.test_os import HAVE_DESKTOP

    if not HAVE_DESKTOP:
        pytest.skip("xvfb/at-spi/pyatspi not installed (make setup)")
    from lwm.envs.real.os import OSEnv

    probe, _ = canary
    env = OSEnv()
    try:
        env.reset()
        obs, *_ = env.step(probe)
        assert_contained(verdict(obs))
    finally:
        env.close()


def test_the_sandbox_starts_from_an_empty_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SECRET_TOKEN", "lwm-canary-env")
    argv = Sandbox(tmp_path).argv("true")
    at = argv.index("env")  # bubblewrap itself (the sandbox's pid 1) starts from an empty environment
    assert argv[at: at + 3] == ["env", "-i", "PATH=/usr/local/bin:/usr/bin:/bin"] and "bwrap" in argv[at + 3]
    done = subprocess.run(Sandbox(tmp_path).argv("sh", "-c", "cat /proc/1/environ; env"), capture_output=True)
    assert b"lwm-canary-env" not in done.stdout
    shown = subprocess.run(Sandbox(tmp_path).argv("ls", "-A", "/sys/class/net"), capture_output=True, text=True)
    assert shown.returncode == 0 and shown.stdout == ""  # the host's interfaces are not named inside


def test_the_seccomp_filter_refuses_user_namespaces_and_keystroke_injection(tmp_path):
    pytest.importorskip("pyseccomp")
    argv = Sandbox(tmp_path).argv("python3", "-c", textwrap.dedent("""\
        import ctypes, errno, fcntl, os, termios
        libc = ctypes.CDLL(None, use_errno=True)
        print(libc.unshare(0x10000000), ctypes.get_errno() == errno.EPERM)
        try:
            fcntl.ioctl(0, termios.TIOCSTI, b"x")
        except OSError as exc:
            print(exc.errno == errno.EPERM)
        print(libc.syscall(435, 0, 0), ctypes.get_errno() == errno.ENOSYS)  # clone3
        print(os.fork() and "forked")  # plain forks still work
        """))
    assert "--seccomp" in argv
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    # unshare refused, TIOCSTI refused, clone3 refused; the child of the fork prints 0, the parent "forked"
    assert done.stdout.split()[:5] == ["-1", "True", "True", "-1", "True"], done.stdout + done.stderr
    assert "forked" in done.stdout.split()[5:]


@pytest.mark.skipif(not ROOT, reason="per-episode uids are drawn only when lwm runs as root")
def test_each_sandbox_runs_as_a_uid_of_its_own_with_a_name(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    a, b = Sandbox(tmp_path / "a"), Sandbox(tmp_path / "b")
    assert a.uid != b.uid and a.uid >= 1_000_000
    done = subprocess.run(a.argv("sh", "-c", "id -un; id -u; touch made"), capture_output=True, text=True)
    assert done.stdout.split() == ["user", str(a.uid)]
    assert (tmp_path / "a" / "made").stat().st_uid == a.uid


# --- limits ------------------------------------------------------------------------------------------
def test_a_memory_bomb_fails_inside_and_the_episode_goes_on():
    with swe_episode(limits=Limits(memory_mb=512)) as env:
        obs = bash(env, "python3 -c 'b = bytearray(2 << 30)'")
        assert "MemoryError" in obs and "[exit code: 1]" in obs
        assert bash(env, "echo still here") == "still here\n[exit code: 0]"


def test_file_size_and_open_files_are_limited():
    with swe_episode(limits=Limits(file_size_mb=1, open_files=64)) as env:
        obs = bash(env, "head -c 2M /dev/zero > big; ls -l big | cut -d' ' -f5; ulimit -n")
        assert "File size limit exceeded" in obs or "File too large" in obs
        assert "1048576\n64\n" in obs


@pytest.mark.skipif(not ROOT, reason="an episode's cgroup is made only when lwm runs as root")
def test_the_episodes_memory_is_held_as_a_whole_and_the_episode_goes_on():
    """Per-process limits once let four 1.5 GB processes of one episode hold 3.3 GB together."""
    with swe_episode(limits=Limits(memory_mb=1024, episode_memory_mb=400)) as env:
        hold = "python3 -c 'b = bytearray(300 << 20); import time; time.sleep(3)'"
        obs = bash(env, f"{hold} & a=$!; {hold} & b=$!; wait $a; echo a=$?; wait $b; echo b=$?")
        assert "=137" in obs, obs  # one of the two (each within its own limit) was ended: SIGKILL
        assert env._sandbox.memory_kills() >= 1
        assert bash(env, "echo still here") == "still here\n[exit code: 0]"


@pytest.mark.skipif(not ROOT, reason="a work folder of its own size is mounted only when lwm runs as root")
def test_the_episodes_disk_is_held_as_a_whole_and_released_after():
    """Per-file limits once let `yes > f1; yes > f2` leave 2.1 GB in the host's work folder."""
    with swe_episode(limits=Limits(disk_mb=64)) as env:
        obs = bash(env, "head -c 40M /dev/zero > f1; head -c 40M /dev/zero > f2; du -sm . | cut -f1")
        assert "No space left on device" in obs, obs
        assert int(obs.split("\n")[-2]) <= 64
        folder = env._tmp
        assert str(folder) in Path("/proc/mounts").read_text()
        assert bash(env, "rm f2; echo freed") == "freed\n[exit code: 0]"
    assert str(folder) not in Path("/proc/mounts").read_text() and not folder.exists()
    assert not list(folder.parent.glob(f".{folder.name}-*.img"))


@needs_tmux
@pytest.mark.skipif(not ROOT, reason="RLIMIT_NPROC binds a uid of the episode's own only when lwm runs as root")
def test_a_fork_bomb_ends_the_episode_only():
    env = TerminalEnv(limits=Limits(processes=64))
    try:
        env.reset()
        uid = env._sandbox.uid
        env.step(json.dumps([{"keystrokes": "bomb() { bomb | bomb & }; bomb\n", "duration": 3.0}]))
        assert 0 < len(processes_of(uid)) <= 64  # held at the limit
        assert subprocess.run(["true"]).returncode == 0  # the host still forks
    finally:
        env.close()
    assert wait_for(lambda: not processes_of(uid), 10), processes_of(uid)


# --- hangs and floods -----------------------------------------------------------------------------------
@pytest.mark.parametrize("timeout", ["abc", 1e999, -1, True, [3]])
def test_bad_bash_timeouts_are_error_observations(timeout):
    with swe_episode() as env:
        assert bash(env, "echo hi", timeout=timeout).startswith("Error: invalid arguments for bash: timeout")


def test_a_flood_of_output_is_capped_head_and_tail():
    with swe_episode() as env:
        started = time.monotonic()
        obs = bash(env, "echo FIRST; yes | head -c 30000000; echo; echo LAST")
        assert time.monotonic() - started < 60
        assert obs.startswith("FIRST\n") and obs.endswith("LAST\n[exit code: 0]")
        assert len(obs) < 110_000 and "bytes of output omitted" in obs
        turn = env.trajectory.turns[-1].observation.content
        assert len(turn) < 110_000


def test_a_command_that_never_ends_is_stopped_at_its_timeout():
    with swe_episode() as env:
        started = time.monotonic()
        obs = bash(env, "sleep 1000 & yes", timeout=2)
        assert time.monotonic() - started < 15 and obs.endswith("[command timed out after 2 s]")


# --- leftovers -----------------------------------------------------------------------------------------
KILLED = textwrap.dedent("""\
    import sys, time
    from lwm.envs.real import SWEEnv, TerminalEnv
    envs = [TerminalEnv(), SWEEnv()]
    for env in envs:
        env.reset()
    envs[1].step('{"name": "bash", "arguments": {"command": "sleep 300 >/dev/null & echo started"}}')
    print(envs[0]._sandbox.uid, envs[1]._sandbox.uid, flush=True)
    time.sleep(600)
""")


def lwm_files() -> set[str]:
    return {p.name for p in Path("/tmp").iterdir() if p.name.startswith("lwm-")}


@needs_tmux
@pytest.mark.skipif(not ROOT, reason="the processes are counted by the episodes' own uids (lwm as root)")
@pytest.mark.slow
def test_a_killed_collector_leaves_no_processes_or_files(tmp_path):
    before = lwm_files()
    proc = subprocess.Popen([sys.executable, "-c", KILLED], stdout=subprocess.PIPE, text=True, cwd=Path.cwd())
    uids = [int(u) for u in proc.stdout.readline().split()]
    assert len(uids) == 2 and all(processes_of(uid) for uid in uids[:1])
    assert lwm_files() - before  # the episodes' folders and sockets exist
    proc.kill()
    proc.wait()
    assert wait_for(lambda: not any(processes_of(uid) for uid in uids), 10)
    assert wait_for(lambda: not (lwm_files() - before), 10), lwm_files() - before
    assert wait_for(lambda: " /tmp/lwm-" not in Path("/proc/mounts").read_text(), 10)  # work folders' filesystems


@pytest.mark.skipif(not ROOT, reason="an episode's cgroup is made only when lwm runs as root")
def test_the_empty_cgroups_of_killed_lwm_processes_are_removed(tmp_path, monkeypatch):
    """A process killed before closing its sandboxes leaves their (empty) cgroups; a full test run left 79."""
    from lwm.envs.real import enclosure

    monkeypatch.setattr(enclosure, "_swept", set())
    sandbox = Sandbox(tmp_path)  # makes its cgroup: the parent of the stale one below
    try:
        parent = sandbox._cgroup.folders[0].parent
        dead = subprocess.Popen(["true"])
        dead.wait()  # a pid that is gone
        stale = parent / f"lwm-{dead.pid}-0"
        stale.mkdir()
        monkeypatch.setattr(enclosure, "_swept", set())
        Sandbox(tmp_path).close()
        assert not stale.exists()
    finally:
        sandbox.close()
