"""The WideSearch-like search suite, built from the structure of lwm's local corpus.

Three families of "fill a table" tasks, each row an entity whose cells are on a page of the corpus:

- ``syscall``: Linux system calls -> the one-line summary of their manual page (man7.org, section 2);
- ``pymodule``: Python standard-library modules -> the summary in their docs page title (docs.python.org);
- ``signal``: signals -> their default action and the standard that defined them (the signal(7) table).

Every gold row is checked against the real search engine when the suite is built: the entity's page
must be among the ``web_search`` results for a plain query (``syscall``/``pymodule``: the page title
carries the summary), or ``web_extractor`` on the page found must show the row (``signal``). Held-out
tasks draw their entities from a held-out share of each family's entities, so no held-out row is seen in
training (signals are too few for that: there the split is by task).

One-row ``*-lookup`` families reuse those entities; ``*-fictional`` families make entities up, for the
simulator only (``observed`` checks, see ``FICTIONAL``).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable

from lwm.envs.real.search import DEFAULT_SOURCES, SearchIndex, corpus_index
from lwm.envs.real.search_corpus import markdown
from lwm.rollout.table import to_markdown
from lwm.rollout.tasks import Check, Task
from lwm.types import Context

FAMILIES = {"syscall": 150, "pymodule": 150, "signal": 40, "syscall-lookup": 150, "pymodule-lookup": 150}
"""Tasks per family. ``*-lookup`` families are one-row tasks over the same entities (one search, then the
answer): sized so a small warm-started policy scores above 0 and below the ceiling. They come last, so the
2-3 row tasks before them are the same for a seed whether or not they are built."""
QUERIES = {"syscall": "{} system call", "pymodule": "python {} module", "signal": "signal overview standard signals"}
"""The plain query that finds an entity's page, per base family: the suite checks every gold row with it and
the scripted expert sends it."""
FICTIONAL = {"syscall-fictional": 150, "pymodule-fictional": 150}
"""Sim-only lookups of made-up entities that no page of the corpus describes (``observed`` checks: the answer
must match what the simulated results page said): tasks only a simulator can serve. All train: they are
for training in the simulator; evaluation stays on the real held-out lookups. Built after every other family."""
_STEMS = {
    "syscall": (("fs", "mem", "pid", "io", "sched", "vm", "net", "key", "tty", "clock", "proc", "shm", "sock",
                 "xattr", "cap", "page", "numa", "cgroup", "ring", "trace"),
                ("bind", "seal", "probe", "drain", "pin", "remap", "snoop", "lease", "fence", "graft", "tally",
                 "quiesce", "rebase", "stamp", "mirror", "sweep", "latch", "thaw", "scrub", "pledge"), "{}_{}"),
    "pymodule": (("path", "text", "heap", "net", "time", "byte", "code", "mail", "data", "file", "shell", "token",
                  "frame", "queue", "stream", "glob", "char", "dict", "proc", "log"),
                 ("watch", "grid", "view", "probe", "lint", "pool", "ledger", "relay", "forge", "mux", "shelf",
                  "weave", "stamp", "sieve", "crate", "loom", "knot", "vault", "drift", "prism"), "{}{}"),
}
TITLES = {"syscall": r"\[{}\(2\) — (?P<Summary>[^\]\n]+)\]", "pymodule": r"\[{} — (?P<Summary>[^\]\n]+)\]"}
"""How a results page titles an entity's page (``[name(2) — summary](url)``), as a regex for ``observed``."""
HELDOUT_SHARE = 0.2
_SIGNAL_ROW = re.compile(r"\b(SIG[A-Z0-9]+) (P1990|P2001) (Term|Core|Ign|Stop|Cont) ")


def _heldout(entity: str) -> bool:
    return int(hashlib.sha256(entity.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < HELDOUT_SHARE


def _found(index: SearchIndex, query: str, url: str) -> bool:
    return any(d.url == url for d in index.search(query))


def syscalls(index: SearchIndex) -> dict[str, str]:
    """name -> summary, for every section-2 page whose page is found by '<name> system call'."""
    out = {}
    for doc in index.docs:
        match = re.fullmatch(r"([a-z][a-z0-9_]*)\(2\) — (.+)", doc.title)
        if doc.source == "man" and match and _found(index, QUERIES["syscall"].format(match.group(1)), doc.url):
            out[match.group(1)] = match.group(2).strip()
    return out


def pymodules(index: SearchIndex) -> dict[str, str]:
    """module -> summary, for every library page titled '<module> — <summary>' found by 'python <module> module'."""
    out = {}
    for doc in index.docs:
        match = re.fullmatch(r"([a-z_][\w.]*) — (.+)", doc.title)
        if doc.source == "python-docs" and "/library/" in doc.url and match \
                and _found(index, QUERIES["pymodule"].format(match.group(1)), doc.url):
            out[match.group(1)] = match.group(2).strip()
    return out


def signals(index: SearchIndex) -> dict[str, tuple[str, str]]:
    """signal -> (action, standard) from signal(7), when its page is found by 'signal overview' and shows the row."""
    page = next((d for d in index.docs if d.title.startswith("signal(7)")), None)
    if page is None or not _found(index, QUERIES["signal"], page.url):
        return {}
    text = markdown(page)
    return {m.group(1): (m.group(3), m.group(2)) for m in _SIGNAL_ROW.finditer(text)}


def _instruction(what: str, names: list[str], columns: list[str], explain: str) -> str:
    return (f"Fill in a table with one row per {what}: {', '.join(names)}. Columns: {' | '.join(columns)}. "
            f"{explain} Use the search tools, then give the table as a Markdown table in final_answer.")


def build(seed: int = 0, sources: tuple[str, ...] = DEFAULT_SOURCES,
          progress: Callable[[str], None] | None = None) -> list[Task]:
    """The suite: ``FAMILIES[f]`` tasks per family, 2-3 rows each (one for lookups), deterministic for a seed
    and corpus."""
    index = corpus_index(tuple(sources))
    rng = random.Random(seed)
    made: list[Task] = []
    say = progress or (lambda _: None)
    say("system calls")
    calls = syscalls(index)
    say("python modules")
    modules = pymodules(index)
    say("signals")
    sigs = signals(index)
    specs = {
        "syscall": (calls, ["Call", "Summary"], ["Summary"], "system call",
                    "Summary is the one-line description in the call's Linux manual page (its NAME line).",
                    lambda name: {"Call": name, "Summary": calls[name]}),
        "pymodule": (modules, ["Module", "Summary"], ["Summary"], "Python standard-library module",
                     "Summary is the short description in the title of the module's page in the Python docs.",
                     lambda name: {"Module": name, "Summary": modules[name]}),
        "signal": (sigs, ["Signal", "Action", "Standard"], [], "signal",
                   "Action is its default action (Term, Core, Ign, Stop or Cont) and Standard the standard that "
                   "defined it (P1990 or P2001), as the signal(7) manual page gives them.",
                   lambda name: {"Signal": name, "Action": sigs[name][0], "Standard": sigs[name][1]}),
    }
    for family, count in FAMILIES.items():
        base, lookup = base_family(family), family.endswith("-lookup")
        entities, columns, text_columns, what, explain, row = specs[base]
        names = sorted(entities)
        if len(names) < 6:
            raise RuntimeError(f"the corpus gave only {len(names)} {family} entities; is the search corpus installed?")
        by_entity = base != "signal"
        pools = {"train": [n for n in names if not _heldout(n)], "heldout": [n for n in names if _heldout(n)]} \
            if by_entity else {"train": names, "heldout": names}
        seen: set[tuple[str, ...]] = set()
        for k in range(count):
            split = "heldout" if k % 5 == 4 else "train"
            while True:
                chosen = tuple(sorted(rng.sample(pools[split], 1 if lookup else rng.choice((2, 3)))))
                if chosen not in seen:
                    break
            seen.add(chosen)
            gold = [row(n) for n in chosen]
            made.append(Task(
                id=f"search/{family}-{k:04d}", domain="search", family=family, split=split,
                instruction=_instruction(what, list(chosen), columns, explain),
                context=Context(task=_instruction(what, list(chosen), columns, explain)),
                check=Check(kind="table", columns=columns, text_columns=text_columns, gold=gold)))
    for family, count in FICTIONAL.items():
        base = base_family(family)
        _, columns, text_columns, what, explain, _ = specs[base]
        for k, name in enumerate(rng.sample(fictional_names(index, base, set(specs[base][0])), count)):
            made.append(Task(
                id=f"search/{family}-{k:04d}", domain="search", family=family, split="train",
                instruction=_instruction(what, [name], columns, explain),
                context=Context(task=_instruction(what, [name], columns, explain)),
                check=Check(kind="observed", columns=columns, text_columns=text_columns, gold=[{columns[0]: name}],
                            pattern=title_pattern(base, name))))
    return made


def fictional_names(index: SearchIndex, base: str, known: set[str]) -> list[str]:
    """Made-up ``base`` entities (stem pairs, sorted): none is a known entity, and the real engine's results for
    the expert's query title no page with it."""
    heads, tails, form = _STEMS[base]
    names = sorted({form.format(h, t) for h in heads for t in tails} - known)
    return [n for n in names
            if not any(re.search(title_pattern(base, n), f"[{d.title}]") for d in index.search(
                QUERIES[base].format(n)))]


def title_pattern(base: str, name: str) -> str:
    """The regex of a results title for entity ``name`` of family ``base``, the summary as group ``Summary``."""
    return TITLES[base].format(re.escape(name))


def base_family(family: str) -> str:
    """``syscall-lookup`` -> ``syscall``: the family whose entities and query a lookup family shares."""
    return family.partition("-")[0]


def expert_queries(task: Task) -> list[str]:
    """The searches that find every gold row of ``task``: one per entity, or the one signal(7) query."""
    base = base_family(task.family)
    if base == "signal":
        return [QUERIES["signal"]]
    return [QUERIES[base].format(row[task.check.columns[0]]) for row in task.check.gold]


def gold_table(task: Task) -> str:
    return to_markdown(task.check.gold, task.check.columns)


def judged_by_page(task: Task) -> Task:
    """``task`` (a one-row lookup) rewarded for answering what the results page it was shown said about its entity
    (an ``observed`` check), not for the real gold row: in a simulator, the simulator is then the only judge, and
    a page it got wrong no longer punishes the policy for reading it. Other tasks come back unchanged."""
    base = base_family(task.family)
    if task.check.kind != "table" or len(task.check.gold) != 1 or base not in TITLES:
        return task
    name = task.check.gold[0][task.check.columns[0]]
    check = task.check.model_copy(update={"kind": "observed", "gold": [{task.check.columns[0]: name}],
                                          "pattern": title_pattern(base, name)})
    return task.model_copy(update={"check": check})
