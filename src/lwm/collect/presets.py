"""Named collections: one command rebuilds the same corpus (same domains, episodes, steps, seeds)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lwm.collect.explorers.programs import PROGRAMS
from lwm.collect.runner import EpisodeSpec, plan
from lwm.envs.real.pytools_catalog import groups as pytool_groups
from lwm.envs.real.search_corpus import SOURCES
from lwm.envs.real.web import START_PAGES
from lwm.provision import swe_sdists

SEARCH_CORPORA = [name for name in SOURCES if name not in ("wn", "gcide")]  # lwm setup search installs the rest
SWE_SDISTS = swe_sdists()
"""Real libraries' source distributions, as pinned in lwm/provision/swe/projects.txt (``lwm setup swe``
downloads them; an episode on one that is missing says to run it)."""
OS_APPS = ["galculator", "gucharmap", "gnumeric", "abiword", "gtk3-widget-factory", "gtk3-demo",
           "gtk3-icon-browser"]  # beside corpus-v1's mousepad


@dataclass(frozen=True)
class Part:
    domain: str
    episodes: int
    max_steps: int
    env_options: dict[str, Any] = field(default_factory=dict)
    tag: str = ""
    policy: str = "explorer"


GIT_SETUP = ["git init -q -b main", "printf 'notes\\n' > notes.txt && printf 'print(1)\\n' > app.py",
             "git add -A && git -c user.email=dev@example.org -c user.name=dev commit -qm 'first commit'",
             "printf 'more\\n' >> notes.txt"]

CORPUS_V1 = [  # six runnable domains, >= 35 trajectories each: 300 trajectories, 3,170 turns (docs/collection.md)
    Part("terminal", 60, 12),
    Part("swe", 50, 12),
    Part("mcp", 20, 10, {"preset": "memory"}, "memory"),
    Part("mcp", 15, 10, {"preset": "filesystem"}, "filesystem"),
    Part("mcp", 10, 8, {"preset": "everything"}, "everything"),
    Part("mcp", 10, 6, {"preset": "time"}, "time"),
    Part("mcp", 10, 8, {"preset": "git", "setup": GIT_SETUP}, "git"),
    Part("search", 50, 12),
    Part("web", 40, 10),
    Part("os", 35, 8),
]
AGENT_LIKE = ("filesystem", "time", "git")
"""corpus-v1's MCP parts that corpus-v2 collects again with the agent-like explorer."""
PRESETS: dict[str, list[Part]] = {
    "corpus-v1": CORPUS_V1,
    # corpus-v1 plus more environments, counted in sources (lwm data stats): one terminal program per part, one
    # documentation site per web part (Debian's HTML docs at their public addresses). Work in progress toward
    # an order of magnitude more sources than corpus-v1 (docs/collection.md).
    "corpus-v2": [
        *[p for p in CORPUS_V1 if p.domain not in ("web", "search") and p.tag not in AGENT_LIKE],
        Part("mcp", 10, 8, {"preset": "sequential-thinking"}, "sequential-thinking"),
        # servers whose arguments a schema cannot suggest get agent-like calls (corpus-v1's random words made
        # every time and git call an error)
        *[replace(p, policy="explorer:mcp-agent") for p in CORPUS_V1 if p.tag in AGENT_LIKE],
        Part("mcp", 10, 8, {"preset": "sqlite"}, "sqlite", "explorer:mcp-agent"),
        Part("mcp", 10, 8, {"preset": "code-runner"}, "code-runner", "explorer:mcp-agent"),
        *[Part("mcp", 10, 8, {"preset": server}, server, "explorer:mcp-agent") for server in ("calculator", "duckdb",
                                                                                             "shell")],
        *[Part("terminal", 12, 10, {}, program, f"explorer:terminal-{program}") for program in PROGRAMS],
        *[Part("web", 8, 8, {"start_url": url}, site, "explorer:web-site") for site, url in START_PAGES.items()],
        # one corpus per search part (corpus-v1's search mixed four), so a corpus can be held out whole
        *[Part("search", 8, 10, {"sources": [corpus]}, corpus) for corpus in SEARCH_CORPORA],
        *[Part("swe", 6, 10, {"project": str(sdist)}, sdist.name.removesuffix(".tar.gz")) for sdist in SWE_SDISTS],
        *[Part("os", 6, 8, {"apps": [app]}, app) for app in OS_APPS],
    ],
    # Real Python APIs as MCP tools, one group (a module's functions, or one object's methods) per part: ~2,000
    # tools, for learning a tool's result from its schema (lwm-mini v5, docs/collection.md "The tool corpus").
    # A module with hundreds of tools is served in slices; a group whose package is not installed fails its part.
    "pytools": [Part("mcp", 4, 8, {"preset": f"pytools:{name}"}, name,
                     "explorer:mcp-python") for name in pytool_groups()],
    # A few episodes per domain, for trying the pipeline and for the sample committed in the repo.
    "sample": [
        Part("terminal", 3, 8), Part("swe", 3, 8), Part("mcp", 2, 6, {"preset": "memory"}, "memory"),
        Part("mcp", 1, 6, {"preset": "filesystem"}, "filesystem"), Part("search", 3, 8), Part("web", 3, 6),
        Part("os", 3, 5),
    ],
}


def plan_preset(name: str, seed: int, out: str | Path, mistake_rate: float = 0.15,
                parts: Sequence[str] = ()) -> tuple[list[EpisodeSpec], int]:
    """The preset's episodes still to run; ``parts`` (``domain:tag``, e.g. ``terminal:ed``) keeps only those
    parts, whose episodes are the very ones the whole preset runs (a part's seeds depend on it alone)."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
    chosen = [p for p in PRESETS[name] if not parts or f"{p.domain}:{p.tag}" in parts]
    unknown = sorted(set(parts) - {f"{p.domain}:{p.tag}" for p in PRESETS[name]})
    if unknown:
        raise ValueError(f"preset {name} has no part {', '.join(unknown)}; its parts: "
                         + ", ".join(f"{p.domain}:{p.tag}" for p in PRESETS[name]))
    todo: list[EpisodeSpec] = []
    skipped = 0
    for part in chosen:
        specs, done = plan(part.domain, part.episodes, part.max_steps, seed, out, part.env_options, mistake_rate,
                           part.tag, part.policy)
        todo += specs
        skipped += done
    return todo, skipped
