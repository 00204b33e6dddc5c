"""The mcp and terminal suites: goals on an environment's state, checked by one more action.

mcp (the memory and filesystem servers): create entities / relations, write files; checked by
``read_graph`` or ``read_text_file`` after the episode. terminal: count, create, find and edit files in
the sandboxed home; checked by a ``printf`` of the result between ``::`` marks (so the command line the
agent typed, which the screen echoes, can never satisfy the check by itself). Generated from small
vocabularies with a seed; one in five tasks of each family is held out.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from lwm.rollout.tasks import Check, Task
from lwm.types import Context

WORK = "/home/user/work"
PEOPLE = ["Ada Brook", "Bruno Vale", "Chiara Moss", "Dev Patel", "Elif Kaya", "Femi Ade", "Greta Lind", "Hiro Sato",
          "Ines Faro", "Jonas Berg", "Kira Volk", "Luca Neri", "Mina Park", "Nils Holm", "Oona Rask", "Pia Lund"]
KINDS = ["person", "project", "city", "company"]
FACTS = ["speaks Finnish", "likes chess", "works remotely", "plays the cello", "was born in 1990", "owns a boat",
         "runs marathons", "reads sci-fi", "keeps bees", "builds robots"]
RELATIONS = ["works_with", "manages", "mentors", "knows"]
WORDS = ["amber", "basil", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kelp",
         "lagoon", "maple", "nectar", "onyx", "pepper", "quartz", "raven", "saffron", "tundra"]


def _state(action: Any, expect: list[str], absent: list[str] | None = None) -> Check:
    return Check(kind="state", action=action, expect=expect, absent=absent or [])


def _shell_check(expression: str, expect: str) -> Check:
    return _state([{"keystrokes": f"clear; printf '::%s::\\n' \"{expression}\"\n", "duration": 0.5}], [f"::{expect}::"])


def mcp_tasks(rng: random.Random, per_family: int = 20) -> list[Task]:
    made: list[Task] = []

    def entity(k: int) -> tuple[str, dict, Check, dict]:
        name, kind, fact = rng.choice(PEOPLE), rng.choice(KINDS), rng.choice(FACTS)
        text = (f"In the knowledge graph, create an entity named '{name}' of type '{kind}' with the observation "
                f"'{fact}'.")
        return text, {"preset": "memory"}, _state({"name": "read_graph", "arguments": {}}, [name, fact]), {}

    def relation(k: int) -> tuple[str, dict, Check, dict]:
        a, b = rng.sample(PEOPLE, 2)
        rel = rng.choice(RELATIONS)
        text = (f"In the knowledge graph, create the entities '{a}' and '{b}' (type 'person') and the relation "
                f"'{a}' {rel} '{b}'.")
        return text, {"preset": "memory"}, _state({"name": "read_graph", "arguments": {}}, [a, b, rel]), {}

    def write(k: int) -> tuple[str, dict, Check, dict]:
        folder, name, word = rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS)
        path = f"{WORK}/{folder}/{name}.txt"
        content = f"{word} {rng.randrange(100, 1000)}"
        text = f"Create the file {path} (and its folder) containing exactly: {content}"
        return text, {"preset": "filesystem"}, _state(
            {"name": "read_text_file", "arguments": {"path": path}}, [content]), {}

    for family, make in (("memory-entity", entity), ("memory-relation", relation), ("filesystem-write", write)):
        made += _family("mcp", family, per_family, make)
    return made


def terminal_tasks(rng: random.Random, per_family: int = 20) -> list[Task]:
    def count(k: int) -> tuple[str, dict, Check, dict]:
        lines = rng.randrange(3, 40)
        files = {"data.txt": "".join(f"{rng.choice(WORDS)} {i}\n" for i in range(lines))}
        return ("Write the number of lines in data.txt (just the number) into the file count.txt.", {},
                _shell_check("$(cat count.txt 2>/dev/null)", str(lines)), files)

    def create(k: int) -> tuple[str, dict, Check, dict]:
        folder, name, word = rng.sample(WORDS, 3)
        return (f"Create a folder {folder} with a file {name}.txt in it whose only line is: {word}", {},
                _shell_check(f"$(cat {folder}/{name}.txt 2>/dev/null)", word), {})

    def find(k: int) -> tuple[str, dict, Check, dict]:
        names = rng.sample(WORDS, 4)
        secret = rng.choice([w for w in WORDS if w not in names])
        holder = rng.choice(names)
        files = {f"notes/{n}.txt": (f"the word is {secret}\n" if n == holder else f"nothing here {n}\n") for n in names}
        return (f"One of the files in the notes folder contains the word '{secret}'. Write that file's name "
                "(for example x.txt) into answer.txt.", {}, _shell_check("$(cat answer.txt 2>/dev/null)",
                                                                        f"{holder}.txt"), files)

    def edit(k: int) -> tuple[str, dict, Check, dict]:
        old, new = rng.sample(WORDS, 2)
        files = {"config.ini": f"[main]\nmode={old}\nretries=3\n"}
        check = _shell_check("$(grep ^mode= config.ini 2>/dev/null)", f"mode={new}")
        return f"In config.ini, change the mode setting from {old} to {new}, keeping the other lines.", {}, check, files

    made: list[Task] = []
    for family, make in (("count-lines", count), ("create-file", create), ("find-file", find), ("edit-config", edit)):
        made += _family("terminal", family, per_family, make)
    return made


def _family(domain: str, family: str, count: int,
            make: Callable[[int], tuple[str, dict, Check, dict]]) -> list[Task]:
    out = []
    for k in range(count):
        text, options, check, files = make(k)
        out.append(Task(id=f"{domain}/{family}-{k:04d}", domain=domain, family=family,
                        split="heldout" if k % 5 == 4 else "train", instruction=text,
                        context=Context(task=text), env_options=options, files=files, check=check))
    return out


def server_tools(preset: str) -> list[dict[str, Any]]:
    """The tool list a real preset server announces (the simulator is given the same tools)."""
    from lwm.envs.real.mcp import MCPEnv

    env = MCPEnv(preset=preset)
    try:
        env.reset()
        return list(env.context.tools)
    finally:
        env.close()


def build(domain: str, seed: int = 0) -> tuple[list[Task], dict[str, list[dict[str, Any]]]]:
    """The suite, and for mcp the tools each preset's real server announces (the servers are started), which
    the simulator is given (``suites/mcp-tools-v1.json``) so that sim and real offer the same tools."""
    rng = random.Random(f"{domain}-{seed}")
    if domain != "mcp":
        return terminal_tasks(rng), {}
    made = mcp_tasks(rng)
    return made, {preset: server_tools(preset) for preset in sorted({t.env_options["preset"] for t in made})}
