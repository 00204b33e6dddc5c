"""Which environment a trajectory came from (its *source*), and splits that hold whole sources out.

A held-out split by trajectory shares apps, servers, sites and projects with training, so it measures
memory of a few environments; holding out whole sources measures transfer to environments the model never
saw. The source is ``provenance.extra["source"]`` when the collector recorded one, else read from what
each domain records: the MCP server, the OS apps, the web site's host, the SWE project, the search corpus,
the environment otherwise (lwm's terminal records one bash sandbox, so terminal has a single source until
collectors record the program explored).
"""

from __future__ import annotations

import hashlib
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from lwm.domains import get_domain
from lwm.registry import UnknownPartError
from lwm.types import Trajectory


def source_of(trajectory: Trajectory) -> str:
    provenance = trajectory.provenance
    extra = provenance.extra or {}
    if extra.get("source"):
        return str(extra["source"])
    try:
        found = get_domain(trajectory.domain).source(trajectory)
    except UnknownPartError:  # a domain no longer (or not here) registered: its provenance still tells
        found = None
    return found or provenance.environment or f"{trajectory.domain}:unknown"


def _rank(key: str, seed: int) -> float:
    """A stable draw in [0, 1) per key and seed: the same trajectory or source always lands on the same side."""
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def heldout_sources(trajectories: Iterable[Trajectory], fraction: float, seed: int,
                    keep: Iterable[str] = (), hold: Iterable[str] = ()) -> dict[str, set[str]]:
    """Per domain, the sources held out: a seeded ``fraction`` of them, at least one and never all (a domain
    with a single source holds none out: there is nothing to hold out that training would not lack).

    Sources in ``keep`` are never held out — e.g. those an already trained model saw, so that it and a new
    model can be compared on environments neither trained on. ``hold`` names the held-out sources outright
    instead: a published split stays the same however many sources the corpus gains later."""
    keep, hold = set(keep), set(hold)
    by_domain: dict[str, set[str]] = defaultdict(set)
    for trajectory in trajectories:
        by_domain[trajectory.domain].add(source_of(trajectory))
    if hold:
        return {domain: sources & hold for domain, sources in by_domain.items()}
    chosen = {}
    for domain, sources in by_domain.items():
        ranked = sorted(sources - keep, key=lambda s: _rank(s, seed))
        room = len(ranked) - (0 if sources & keep else 1)  # something must stay in training
        chosen[domain] = set(ranked[:min(room, max(1, round(fraction * len(sources))))]) if room > 0 else set()
    return chosen


@dataclass
class Split:
    train: list[Trajectory]
    heldout: list[Trajectory]
    held_sources: dict[str, set[str]] = field(default_factory=dict)
    """With ``by="source"``: per domain, the sources held out whole."""


def split(trajectories: Sequence[Trajectory], fraction: float, seed: int, by: str = "trajectory",
          keep: Iterable[str] = (), hold: Iterable[str] = ()) -> Split:
    """Train / held-out by trajectory (never by turn, so no held-out turn's history is seen in training: a
    seeded ``fraction`` of trajectories) or by source (``heldout_sources``). Raises ``ValueError`` for an unknown
    ``by``, or ``keep`` / ``hold`` naming sources the data does not have or naming one source twice."""
    if by not in ("trajectory", "source"):
        raise ValueError(f"--by must be 'trajectory' or 'source', not {by!r}")
    keep, hold = list(keep), list(hold)
    for option, names in (("--keep", keep), ("--hold", hold)):
        if unknown := sorted(set(names) - {source_of(t) for t in trajectories}):
            raise ValueError(f"{option} names sources the data does not have: {', '.join(unknown)}")
    if both := sorted(set(keep) & set(hold)):
        raise ValueError(f"--keep and --hold both name {', '.join(both)}")
    held: dict[str, set[str]] = {}
    if by == "source":
        held = heldout_sources(trajectories, fraction, seed, keep, hold)
        test = [t for t in trajectories if source_of(t) in held[t.domain]]
    else:
        test = [t for t in trajectories if _rank(t.id, seed) < fraction]
    held_ids = {t.id for t in test}
    return Split([t for t in trajectories if t.id not in held_ids], test, held)


@dataclass
class DomainCounts:
    """A collection's counts and lengths for one domain (``lwm data stats``)."""

    domain: str
    trajectories: int
    sources: int
    turns: int
    turns_median: float
    observation_chars_median: float | None
    step_seconds_median: float | None


def domain_counts(trajectories: Iterable[Trajectory]) -> list[DomainCounts]:
    """Counts and medians per domain, with its distinct environments (``source_of``)."""
    by_domain: dict[str, list[Trajectory]] = {}
    for t in trajectories:
        by_domain.setdefault(t.domain, []).append(t)
    out = []
    for domain, items in sorted(by_domain.items()):
        turns = [turn for t in items for turn in t.turns]
        seconds = [turn.observation.metadata["seconds"] for turn in turns if "seconds" in turn.observation.metadata]
        out.append(DomainCounts(domain, len(items), len({source_of(t) for t in items}), len(turns),
                                statistics.median(len(t.turns) for t in items),
                                statistics.median(len(u.observation.content) for u in turns) if turns else None,
                                statistics.median(seconds) if seconds else None))
    return out
