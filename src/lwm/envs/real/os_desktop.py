"""The desktop of one OS episode, run INSIDE the episode's sandbox with Debian's python3.

It starts the X server (Xvfb, with an authorisation cookie, no TCP), a D-Bus session, the AT-SPI bus
and the applications, then answers the OS environment's requests, one JSON object per line on stdin:
``{"op": "run", "code": ..., "timeout": s, "settle": s}`` runs an action (Python, with lwm's interpreter)
and answers its output and the accessibility tree; ``{"op": "tree"}`` answers the tree. Everything the
episode starts lives in the one sandbox: its own /tmp (so its own /tmp/.X11-unix), network namespace
(so its own abstract X socket) and uid, so an action can reach its own display and no other, and no
application can write outside the episode's folder.
"""

import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

AT_SPI_LAUNCHER = "/usr/libexec/at-spi-bus-launcher"
OUTPUT_LIMIT = 100_000


def spawn(procs, argv, **kwargs):
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=kwargs.pop("stdout", subprocess.DEVNULL),
                            stderr=subprocess.DEVNULL, **kwargs)
    procs.append(proc)
    return proc


def tree(script, timeout=30):
    try:
        done = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=timeout,
                              errors="replace")
    except subprocess.TimeoutExpired:
        return f"(no accessibility tree: reading it took over {timeout} s)"
    return done.stdout.rstrip() or f"(no accessibility tree: {done.stderr.strip()[-300:]})"


def run_action(config, code, timeout):
    """Run the action's code in its own process group; output goes to a file (the bounded /tmp), of which
    the head and tail come back."""
    out_path = Path(os.environ["XDG_RUNTIME_DIR"]) / "action-output"
    with open(out_path, "w+b") as out:
        proc = subprocess.Popen([config["action_python"], "-c", code], stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True, cwd=os.environ["HOME"],
                                env={**os.environ, "PATH": config["action_path"], "PYTHONUNBUFFERED": "1"})
        try:
            proc.wait(timeout=timeout)
            note = ""
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            note = f"[action timed out after {timeout:g} s]\n"
        size = out.seek(0, 2)
        half = OUTPUT_LIMIT // 2
        out.seek(0)
        if size <= OUTPUT_LIMIT:
            text = out.read().decode(errors="replace")
        else:
            head = out.read(half).decode(errors="replace")
            out.seek(size - half)
            tail = out.read().decode(errors="replace")
            text = f"{head}\n[... {size - 2 * half:,} bytes of output omitted ...]\n{tail}"
    return text + note


def main():
    config = json.loads(sys.argv[1])
    runtime = Path(os.environ["XDG_RUNTIME_DIR"])
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    auth = os.environ["XAUTHORITY"]
    subprocess.run(["xauth", "-q", "-f", auth, "add", ":0", ".", secrets.token_hex(16)], check=True,
                   capture_output=True)
    procs = []
    width, height = config["size"]
    spawn(procs, ["Xvfb", ":0", "-auth", auth, "-nolisten", "tcp", "-screen", "0", f"{width}x{height}x24"])
    deadline = time.monotonic() + 15
    while not Path("/tmp/.X11-unix/X0").exists():
        if time.monotonic() > deadline or procs[0].poll() is not None:
            print(json.dumps({"id": 0, "error": f"Xvfb did not start (exit code {procs[0].poll()})"}), flush=True)
            return
        time.sleep(0.02)
    bus = spawn(procs, ["dbus-daemon", "--session", "--nofork", "--print-address=1",
                        f"--address=unix:path={runtime}/bus"], stdout=subprocess.PIPE)
    os.environ["DBUS_SESSION_BUS_ADDRESS"] = bus.stdout.readline().decode().strip()
    spawn(procs, [AT_SPI_LAUNCHER, "--launch-immediately"])
    time.sleep(0.3)
    for app in config["apps"]:
        spawn(procs, [app], cwd=os.environ["HOME"])
    deadline = time.monotonic() + 40  # within the caller's 60 s: a loaded machine starts apps slowly
    text = tree(config["tree_script"])
    while not all(f"application '{app}'" in text for app in config["apps"]):
        if time.monotonic() > deadline:
            print(json.dumps({"id": 0, "error": f"applications {config['apps']} did not appear in the accessibility "
                                                "tree within 40 s"}), flush=True)
            return
        time.sleep(0.2)
        text = tree(config["tree_script"])
    print(json.dumps({"id": 0, "tree": text}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "run":
            output = run_action(config, request["code"], request["timeout"])
            time.sleep(request["settle"])
            print(json.dumps({"id": request["id"], "output": output, "tree": tree(config["tree_script"])}), flush=True)
        else:
            print(json.dumps({"id": request["id"], "tree": tree(config["tree_script"])}), flush=True)


if __name__ == "__main__":
    main()
