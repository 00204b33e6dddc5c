"""Per-domain sample actions and observations for tests: (action content, observation text) per turn."""

from __future__ import annotations

from lwm.types import Action, Context, Observation, Trajectory, Turn

SAMPLES: dict[str, list[tuple[object, str]]] = {
    "terminal": [
        ([{"keystrokes": "mkdir demo && cd demo\n", "duration": 0.1}], "user@lwm:~$ mkdir demo && cd demo\nuser@lwm:~/demo$ "),
        ([{"keystrokes": "ls -la\n", "duration": 0.2}], "user@lwm:~/demo$ ls -la\ntotal 8\ndrwxr-xr-x 2 user user 4096 Dec  2 10:00 .\nuser@lwm:~/demo$ "),
    ],
    "mcp": [
        ({"name": "create_entities", "arguments": {"entities": [{"name": "Ada", "entityType": "person"}]}},
         '[{"name": "Ada", "entityType": "person", "observations": []}]'),
        ({"name": "read_graph", "arguments": {}}, '{"entities": [{"name": "Ada"}], "relations": []}'),
    ],
    "search": [
        ({"name": "web_search", "arguments": {"query": "python asyncio timeout"}},
         "A search for 'python asyncio timeout' found 10 results:\n1. [asyncio.timeout](https://docs.python.org/3/library/asyncio-task.html)"),
        ({"name": "dict_memory", "arguments": {"operation": "add", "key": "k", "value": "v"}}, "Added key 'k'."),
    ],
    "swe": [
        ({"name": "bash", "arguments": {"command": "git status --short"}}, " M src/pkg/core.py\n[exit code: 0]"),
        ({"name": "read_file", "arguments": {"path": "src/pkg/core.py", "start": 1, "end": 2}}, "1\timport os\n2\t"),
    ],
    "web": [
        ("goto('http://127.0.0.1:8080/login')", "URL: http://127.0.0.1:8080/login\n[3] textbox 'Username'\n[4] button 'Sign in'"),
        ("fill('3', 'ada')\nclick('4')", "URL: http://127.0.0.1:8080/home\n[7] heading 'Welcome, ada'"),
    ],
    "os": [
        ("import subprocess\nsubprocess.Popen(['mousepad'])", "application 'mousepad'\n  frame 'Untitled 1 - Mousepad' (0, 0, 800, 600) active"),
        ("import pyautogui\npyautogui.write('hi')", "application 'mousepad'\n  text '' -> 'hi' editable focused"),
    ],
    "android": [
        ({"action": "launch_app", "package": "com.android.settings"}, "FrameLayout\n  TextView id=title text='Settings' [0,80][1080,200]"),
        ({"action": "tap", "x": 540, "y": 400}, "FrameLayout\n  TextView id=title text='Network & internet'"),
    ],
}

BAD_ACTIONS: dict[str, object] = {
    "terminal": {"keys": "ls"},
    "mcp": {"arguments": {"a": 1}},
    "search": {"name": "web_browse", "arguments": {}},
    "swe": ["not", "a", "call"],
    "web": "open_the_door('3')",
    "os": "def broken(:\n  pass",
    "android": {"x": 10, "y": 20},  # names no action (an unknown one is passed on for the model to answer)
}


def trajectory(domain: str, turns: int | None = None, **context: object) -> Trajectory:
    pairs = SAMPLES[domain][:turns]
    return Trajectory(
        domain=domain,
        context=Context(**context),
        turns=[Turn(action=Action(content=a), observation=Observation(content=o)) for a, o in pairs],
    )
