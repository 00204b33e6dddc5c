"""A bounded soak of the served faces over loopback: many concurrent sessions over OpenEnv (WebSocket) and MCP
(streamable HTTP) sending random valid and invalid actions, some clients vanishing mid-step, for a fixed time;
then the checks of issue 46: no stalled session (each server still answers a fresh session at once), no
leftover sandbox or process once the servers stop, and every episode a client saw stored exactly once.

The world model is the mock backend (no model cost: the soak is of the serving layer); ``--real N`` also runs
N of the OpenEnv clients against a second OpenEnv server that fronts the real sandboxed terminal, where
stalls, leaked sandboxes and processes would show.
Usage: python benchmarks/soak_serve.py [--minutes 10] [--sessions 32] [--real 4]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx2 as httpx
from rich.console import Console
from rich.live import Live
from rich.table import Table
from websockets.sync.client import connect

sys.path.insert(0, str(Path(__file__).parent))
from serve_throughput import free_port, start  # noqa: E402

from lwm.data import read_trajectories  # noqa: E402

console = Console(width=160)
TOOLS = [{"name": "lookup", "description": "Find a record by key",
          "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}}]


def terminal_action(rng: random.Random) -> str | bytes:
    """A random frame: mostly valid steps, then the malformed and hostile ones issues 46 and 62 found."""
    valid = {"type": "step", "data": {"action": [{"keystrokes": f"echo {rng.randrange(10**6)}\n",
                                                  "duration": rng.choice([0, 0.05, 0.1])}]}}
    bad = [{"type": "step", "data": {"action": [{"keystrokes": "sleep 1\n", "duration": 1e9}]}},
           {"type": "step", "data": {"action": [{"keystrokes": "a\x00b"}]}},
           {"type": "step", "data": {"action": [{"keystrokes": "x" * 150_000, "duration": 0}]}},
           {"type": "step", "data": {"action": {"not": "an action"}}},
           {"type": "reset", "data": {"task": "nope/x"}}, [1, 2], "reset", b"\x00\x01", "{not json",
           # issue 62: a lone surrogate (lost the episode), a flood of newlines (a tmux call each), 10**400
           '{"type": "step", "data": {"action": [{"keystrokes": "echo \\ud800\\n", "duration": 0.1}]}}',
           {"type": "step", "data": {"action": [{"keystrokes": "\n" * 20_000, "duration": 0}]}},
           {"type": "step", "data": {"action": [{"keystrokes": "ls\n", "duration": 10**400}]}}]
    chosen = valid if rng.random() < 0.8 else rng.choice(bad)
    if isinstance(chosen, bytes):
        return chosen
    return json.dumps(chosen, allow_nan=True) if not isinstance(chosen, str) else chosen


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.episodes: dict[str, set[str]] = {"openenv": set(), "openenv-real": set(), "mcp": set()}

    def add(self, key: str, n: int = 1) -> None:
        with self.lock:
            self.counts[key] += n


def openenv_client(url: str, face: str, until: float, seed: int, tally: Tally) -> None:
    rng = random.Random(seed)
    while time.monotonic() < until:
        try:
            socket = connect(url.replace("http", "ws") + "/ws", open_timeout=30, max_size=2**24, legacy=True)
        except Exception:  # noqa: BLE001 - counted: the server was full or busy
            tally.add(f"{face} connect refused")
            time.sleep(0.5)
            continue
        try:
            socket.send(json.dumps({"type": "reset", "data": {"seed": rng.randrange(1000)}}))
            json.loads(socket.recv(timeout=60))
            socket.send(json.dumps({"type": "state"}))
            episode = json.loads(socket.recv(timeout=60))["data"].get("episode_id")
            stepped = False  # an episode with a step that ran is one the store must hold
            for _ in range(rng.randrange(1, 12)):
                socket.send(terminal_action(rng))
                if rng.random() < 0.05:  # vanish mid-step: no goodbye, the answer never read
                    tally.add(f"{face} vanished mid-step")
                    break
                answer = json.loads(socket.recv(timeout=120))
                kind = answer["type"]
                info = (answer["data"].get("observation") or {}).get("info") or {} if kind == "observation" else {}
                stepped = stepped or (kind == "observation" and "turn" in info and "invalid_action" not in info)
                tally.add(f"{face} {kind}" + (f" {answer['data'].get('code')}" if kind == "error" else ""))
            else:
                socket.send(json.dumps({"type": "close"}))
            if episode and stepped:
                with tally.lock:
                    tally.episodes[face].add(episode)
        except Exception as exc:  # noqa: BLE001 - a timeout here is a stalled session: counted, reported
            tally.add(f"{face} client error {type(exc).__name__}")
        finally:
            socket.close()


def mcp_client(url: str, until: float, seed: int, tally: Tally) -> None:
    rng = random.Random(seed)
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    with httpx.Client(timeout=120) as http:
        while time.monotonic() < until:
            init = http.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "soak", "version": "0"}}})
            sid = init.headers.get("mcp-session-id")
            if init.status_code != 200 or not sid:
                tally.add(f"mcp initialize {init.status_code}")
                time.sleep(0.5)
                continue
            session = {**headers, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}
            http.post(url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            for k in range(rng.randrange(1, 20)):
                arguments = {"key": f"k{rng.randrange(100)}"} if rng.random() < 0.8 else rng.choice(
                    [{}, {"key": 5}, {"key": "x" * 100_000}])
                call = {"jsonrpc": "2.0", "id": k + 1, "method": "tools/call",
                        "params": {"name": "lookup" if rng.random() < 0.95 else "nope", "arguments": arguments}}
                answer = http.post(url, headers=session, json=call)
                if answer.status_code != 200:
                    tally.add(f"mcp http {answer.status_code}")
                    continue
                result = answer.json().get("result") or {}
                tally.add("mcp error" if result.get("isError") else "mcp ok")
                session_id = (result.get("_meta") or {}).get("lwm/session")
                if session_id and not result.get("isError"):
                    with tally.lock:
                        tally.episodes["mcp"].add(session_id)
            if rng.random() < 0.5:  # end it, or just leave (the idle timeout ends it)
                http.delete(url, headers=session)


def lwm_processes(root: int) -> list[int]:
    """Processes below ``root`` (its sandboxes, tmux servers, MCP servers)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid, ppid = int(stat.parent.name), int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--sessions", type=int, default=32, help="Concurrent clients per face (OpenEnv and MCP).")
    parser.add_argument("--real", type=int, default=4, help="Of the OpenEnv clients, how many use the real terminal.")
    args = parser.parse_args()
    tally = Tally()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "LWM_CACHE_DIR": tmp}
        (Path(tmp) / "tools.json").write_text(json.dumps(TOOLS))
        ports = {name: free_port() for name in ("openenv", "openenv-real", "mcp")}
        stores = {name: Path(tmp) / f"store-{name}" for name in ports}
        common = ["--max-sessions", str(args.sessions), "--idle-seconds", "20"]
        servers = {
            "openenv": start(["serve", "openenv", "--domain", "terminal", "--model", "mock", "--port",
                              str(ports["openenv"]), "--store", str(stores["openenv"]), *common],
                             f"http://127.0.0.1:{ports['openenv']}/health", env),
            "mcp": start(["serve", "mcp", "--tools", str(Path(tmp) / "tools.json"), "--model", "mock", "--transport",
                          "http", "--port", str(ports["mcp"]), "--store", str(stores["mcp"]), *common],
                         f"http://127.0.0.1:{ports['mcp']}/", env)}
        if args.real:
            servers["openenv-real"] = start(
                ["serve", "openenv", "--domain", "terminal", "--real", "--port", str(ports["openenv-real"]),
                 "--store", str(stores["openenv-real"]), "--max-sessions", str(args.real), "--idle-seconds", "20"],
                f"http://127.0.0.1:{ports['openenv-real']}/health", env)
        until = time.monotonic() + args.minutes * 60
        began = time.time()
        url = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
        threads = [threading.Thread(target=openenv_client, args=(url["openenv"], "openenv", until, i, tally))
                   for i in range(args.sessions - args.real)]
        threads += [threading.Thread(target=openenv_client, args=(url["openenv-real"], "openenv-real", until, 1000 + i,
                                                                  tally)) for i in range(args.real)]
        threads += [threading.Thread(target=mcp_client, args=(url["mcp"] + "/mcp", until, 2000 + i, tally))
                    for i in range(args.sessions)]
        for thread in threads:
            thread.start()
        with Live(console=console, refresh_per_second=1) as live:
            while any(t.is_alive() for t in threads):
                left = max(0.0, until - time.monotonic())
                live.update(f"soak: {left:5.0f} s left · " + " · ".join(f"{k} {v}" for k, v in
                                                                        sorted(tally.counts.items())))
                time.sleep(1)
        for thread in threads:
            thread.join()

        checks = []
        # no stalled session: a fresh client on each face is answered at once
        for name in ("openenv", "openenv-real"):
            if name in servers:
                started = time.monotonic()
                with connect(url[name].replace("http", "ws") + "/ws", open_timeout=30) as socket:
                    socket.send(json.dumps({"type": "reset", "data": {}}))
                    ok = "observation" in socket.recv(timeout=30)
                checks.append((f"{name}: a fresh session answered", ok, f"{time.monotonic() - started:.2f} s"))
        started = time.monotonic()
        fresh = httpx.post(url["mcp"] + "/mcp", headers={"accept": "application/json, text/event-stream"},
                           json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                               "protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "soak", "version": "0"}}}, timeout=30)
        checks.append(("mcp: a fresh session answered", fresh.status_code == 200,
                       f"{time.monotonic() - started:.2f} s"))
        # every server stops on SIGTERM, leaving no process behind
        below = {name: lwm_processes(proc.pid) for name, proc in servers.items()}
        for proc in servers.values():
            proc.send_signal(signal.SIGTERM)
        for name, proc in servers.items():
            try:
                proc.wait(timeout=90)
                stopped = True
            except subprocess.TimeoutExpired:
                proc.kill()
                stopped = False
            grace = time.monotonic() + 15  # a sandbox's watchdog cleans up once its server has gone
            while (left := [p for p in below[name] if Path(f"/proc/{p}").exists()]) and time.monotonic() < grace:
                time.sleep(0.5)
            checks.append((f"{name}: stopped on SIGTERM", stopped, ""))
            checks.append((f"{name}: no process left", not left, f"{len(below[name])} before, {len(left)} left"))
        # every episode a client saw stored exactly once
        for name in servers:
            stored = list(read_trajectories(stores[name])) if stores[name].exists() else []
            key = (lambda t: t.provenance.extra.get("session")) if name == "mcp" else (lambda t: t.id)
            counts = Counter(key(t) for t in stored)
            seen = tally.episodes[name]
            missing = [e for e in seen if counts[e] == 0]
            twice = [e for e, n in counts.items() if n > 1]
            checks.append((f"{name}: every episode stored once", not missing and not twice,
                           f"{len(seen)} seen, {len(stored)} stored, {len(missing)} missing, {len(twice)} twice"))
        sandboxes = [p for p in Path(tempfile.gettempdir()).glob("lwm-sandbox-*") if p.stat().st_mtime > began]
        checks.append(("no lwm-sandbox-* folder left", not sandboxes, f"{len(sandboxes)}"))

    table = Table(title=f"soak: {args.minutes:g} min, {args.sessions} clients per face, {args.real} of them on the "
                        "real terminal")
    for column in ("check", "held", "detail"):
        table.add_column(column)
    for name, held, detail in checks:
        table.add_row(name, "[green]yes[/]" if held else "[red]NO[/]", detail)
    console.print(table)
    counts = Table(title="what the clients got")
    counts.add_column("answer")
    counts.add_column("count", justify="right")
    for key, n in sorted(tally.counts.items()):
        counts.add_row(key, str(n))
    console.print(counts)
    raise SystemExit(0 if all(held for _, held, _ in checks) else 1)


if __name__ == "__main__":
    main()
