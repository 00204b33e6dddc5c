"""What a user waits for in a simulated session: seconds a step, base vs lwm-mini, side by side in one run.

Plays a 10-step session with realistic actions in terminal, MCP (the memory server's tools), search and OS
through ``SimEnv`` (``ModelOptions(model=..., no_cache=True, max_tokens=256)``, as a user builds one), for the
base (``embedded``) and lwm-mini (``embedded:lwm-mini``), interleaved step by step so both share the machine's
noise. Prints per step the seconds, the prompt tokens evaluated anew and reused from the KV cache, the answer
tokens and how the answer ended; then per model and domain the median and total seconds and step 10 / step 2,
and lwm-mini's median over the base's.

Usage: python benchmarks/sim_session.py [--domains terminal mcp search os] [--steps 10] [--json out.json]
       [--model-a embedded] [--model-b embedded:lwm-mini] [--threads N]
       [--model-a embedded:lwm-mini --examples-when-a every-step --examples-when kept]   # two prompt layouts
       [--model-a 'embedded?lora=OLD.gguf' --as-lwm-mini]   # an older lwm-mini against the shipped one
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from lwm.backends.embedded import packaged_guidance
from lwm.envs.sim import SimEnv
from lwm.model_options import ModelOptions
from lwm.rollout.tasks import tools_path
from lwm.types import Context

MEMORY_TOOLS = json.loads(tools_path("mcp").read_text())["memory"]


def _keys(command: str) -> str:
    return json.dumps([{"keystrokes": command + "\n", "duration": 0.5}])


def _call(name: str, **arguments: object) -> str:
    return json.dumps({"name": name, "arguments": arguments})


SESSIONS: dict[str, tuple[Context, list[str]]] = {
    "terminal": (Context(task="Set up a small project and look around"), [_keys(c) for c in (
        "ls -la", "mkdir demo && cd demo", "echo hello > a.txt", "cat a.txt", "pwd", "ls", "echo world >> a.txt",
        "wc -l a.txt", "cd .. && ls", "uname -a")]),
    "mcp": (Context(task="Record what we know about the project's people", tools=MEMORY_TOOLS), [
        _call("read_graph"),
        _call("create_entities",
              entities=[{"name": "Ada", "entityType": "person", "observations": ["writes the parser"]}]),
        _call("create_entities", entities=[{"name": "lwm", "entityType": "project", "observations": ["a toolkit"]}]),
        _call("create_relations", relations=[{"from": "Ada", "to": "lwm", "relationType": "works_on"}]),
        _call("add_observations", observations=[{"entityName": "Ada", "contents": ["reviews pull requests"]}]),
        _call("search_nodes", query="Ada"),
        _call("open_nodes", names=["Ada", "lwm"]),
        _call("delete_observations", deletions=[{"entityName": "Ada", "observations": ["writes the parser"]}]),
        _call("read_graph"),
        _call("search_nodes", query="project")]),
    "search": (Context(task="Find how to set a timeout on an asyncio call in Python"), [
        _call("web_search", query="python asyncio timeout"),
        _call("web_extractor", url="https://docs.python.org/3/library/asyncio-task.html"),
        _call("web_search", query="asyncio.wait_for example"),
        _call("web_search", query="asyncio.timeout context manager python 3.11"),
        _call("web_extractor", url="https://docs.python.org/3/library/asyncio-task.html#timeouts"),
        _call("web_search", query="asyncio TimeoutError vs TimeoutError"),
        _call("web_search", query="cancel asyncio task after seconds"),
        _call("web_extractor", url="https://stackoverflow.com/questions/28609534"),
        _call("web_search", query="asyncio shield timeout"),
        _call("web_search", query="python asyncio timeout best practice")]),
    "os": (Context(task="Write a note in the text editor and save it"), [
        "import pyautogui\npyautogui.hotkey('ctrl', 'alt', 't')",
        "import pyautogui\npyautogui.write('mousepad notes.txt\\n')",
        "import pyautogui\npyautogui.write('Meeting at 10')",
        "import pyautogui\npyautogui.press('enter')",
        "import pyautogui\npyautogui.write('Bring the report')",
        "import pyautogui\npyautogui.hotkey('ctrl', 's')",
        "import pyautogui\npyautogui.click(200, 150)",
        "import pyautogui\npyautogui.hotkey('ctrl', 'a')",
        "import pyautogui\npyautogui.hotkey('ctrl', 'c')",
        "import pyautogui\npyautogui.hotkey('ctrl', 'q')"]),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domains", nargs="+", default=list(SESSIONS), choices=list(SESSIONS))
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--model-a", default="embedded")
    parser.add_argument("--model-b", default="embedded:lwm-mini")
    parser.add_argument("--examples-when", default=None, help="model b's retrieved examples: every-step, no-base or "
                        "kept (default: as its manifest says)")
    parser.add_argument("--examples-when-a", default=None, help="the same for model a")
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: the backend's)")
    parser.add_argument("--json", type=Path, default=None, help="also write every step's numbers here")
    parser.add_argument("--as-lwm-mini", action="store_true", help="ask a model given as a ?lora= adapter file as "
                        "lwm-mini is asked (edits, its packaged transitions): an older lwm-mini beside the shipped one")
    args = parser.parse_args()
    when = {"a": args.examples_when_a, "b": args.examples_when}
    models = {k: f"{m} ({when[k]})" if when[k] else m for k, m in (("a", args.model_a), ("b", args.model_b))}
    specs = {k: f"{m}{'&' if '?' in m else '?'}n_threads={args.threads}" if args.threads else m
             for k, m in (("a", args.model_a), ("b", args.model_b))}
    asked = packaged_guidance("lwm-mini") if args.as_lwm_mini else {}
    guided = {k: bool(asked) and "lora=" in spec for k, spec in specs.items()}
    worlds = {k: ModelOptions(model=spec, no_cache=True, max_tokens=256,
                              examples_when=when[k],
                              edits=True if guided[k] else None,
                              retrieve=[asked["transitions"]] if guided[k] else None).world_model()
              for k, spec in specs.items()}
    console = Console(width=150)
    rows: list[dict[str, object]] = []
    for domain in args.domains:
        context, actions = SESSIONS[domain]
        envs = {k: SimEnv(wm, domain, context) for k, wm in worlds.items()}
        for env in envs.values():
            env.reset(seed=0)
        for step, action in enumerate(actions[:args.steps], start=1):
            for key, env in envs.items():
                started = time.perf_counter()
                env.step(action)
                seconds = time.perf_counter() - started
                meta = env.trajectory.turns[-1].observation.metadata
                prompt, reused = meta.get("prompt_tokens") or 0, meta.get("reused_tokens") or 0
                rows.append({"domain": domain, "model": models[key], "step": step, "seconds": round(seconds, 3),
                             "prompt_tokens": prompt, "new_tokens": prompt - reused, "reused_tokens": reused,
                             "answer_tokens": meta.get("completion_tokens"), "finish": meta.get("finish_reason"),
                             "edit": (meta.get("edit") or {}).get("status"), "form": meta.get("form")})
            console.print(f"{domain} step {step}: " + ", ".join(
                f"{r['model']} {r['seconds']:.2f} s" for r in rows[-len(envs):]))
    steps = Table(title="Every step (new = prompt tokens evaluated, reused = kept from the KV cache)")
    for col in ("domain", "step", *(f"{k} {c}" for k in ("a", "b") for c in ("s", "new", "reused", "answer", "end"))):
        steps.add_column(col, justify="right")
    by = {(r["domain"], r["model"], r["step"]): r for r in rows}
    for domain in args.domains:
        for step in range(1, args.steps + 1):
            cells = []
            for m in models.values():
                r = by.get((domain, m, step))
                end = f"{r['finish']}{'/' + r['edit'] if r and r['edit'] else ''}{'*' if r and r['form'] else ''}" \
                    if r else ""
                cells += [f"{r['seconds']:.2f}", str(r["new_tokens"]), str(r["reused_tokens"]), str(r["answer_tokens"]),
                          end] if r else [""] * 5
            steps.add_row(domain, str(step), *cells)
    console.print(steps)
    console.print(f"a = {models['a']}, b = {models['b']}; end: finish reason / edit status, * = repaired (lwm.forms)")
    summary = Table(title="Seconds a step, per model and domain")
    for col in ("domain", "model", "median s", "total s", "step 10 / step 2", "median answer tokens",
                "b median / a median"):
        summary.add_column(col, justify="right")
    for domain in args.domains:
        medians = {}
        for key, m in models.items():
            mine = [r for r in rows if r["domain"] == domain and r["model"] == m]
            secs = [float(r["seconds"]) for r in mine]
            medians[key] = statistics.median(secs)
            growth = f"{secs[-1] / secs[1]:.2f}" if len(secs) >= 2 else ""
            summary.add_row(domain, m, f"{medians[key]:.2f}", f"{sum(secs):.1f}", growth,
                            f"{statistics.median(int(r['answer_tokens'] or 0) for r in mine):.0f}",
                            f"{medians['b'] / medians['a']:.2f}" if key == "b" else "")
    console.print(summary)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
