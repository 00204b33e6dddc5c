"""Aggregating judged samples into scores, exactly as the published script does, and showing them.

Per domain and dimension: the mean over valid samples (``failed == 0``), normalised as
(mean - 1) / 4 x 100; ``total`` is the same over each sample's total score; overall is the same over
every valid sample's total score. Failed samples are counted and shown, never dropped silently.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import mean
from typing import Any

from rich.table import Table

from lwm.bench.rules import DIMENSIONS
from lwm.stats import paired


def domain_title(domain: str) -> str:
    """A domain's name as tables show it: its ``Domain.title`` (a name no domain has, as it is)."""
    from lwm.domains import domain_names, get_domain

    return get_domain(domain).title if domain in domain_names() else domain


def normalize(raw: float) -> float:
    return (raw - 1) / 4 * 100


def domain_of(row: dict[str, Any]) -> str:
    """A row's domain: its task without a benchmark prefix (``agentworld/mcp`` -> ``mcp``)."""
    return row["task"].split("/")[-1]


def aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_domain: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_domain[domain_of(row)].append(row)
    domains: dict[str, Any] = {}
    totals: list[float] = []
    for domain in sorted(by_domain):
        items = by_domain[domain]
        valid = [r for r in items if r.get("failed", 1.0) == 0.0]
        entry: dict[str, Any] = {"samples": len(items), "valid": len(valid), "failed": len(items) - len(valid)}
        for dim in (*DIMENSIONS, "total_score"):
            values = [r[dim] for r in valid if r.get(dim, 0) != 0]
            entry[dim] = round(normalize(mean(values)), 2) if values else None
            if dim == "total_score":
                totals += values
        exact = [r["exact"] for r in valid if "exact" in r]
        if exact:
            entry["exact"] = round(100 * mean(exact), 2)
        domains[domain] = entry
    return {"domains": domains, "overall": round(normalize(mean(totals)), 2) if totals else None,
            "samples": len(rows), "valid": len(totals), "failed": len(rows) - len(totals)}


def score_table(scores: dict[str, Any], title: str = "AgentWorldBench scores") -> Table:
    table = Table(title=title)
    for col in ("domain", "valid", "failed", *DIMENSIONS, "total"):
        table.add_column(col, justify="left" if col == "domain" else "right")
    fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    for domain, e in scores["domains"].items():
        table.add_row(domain_title(domain), str(e["valid"]), str(e["failed"]),
                      *(fmt(e[d]) for d in DIMENSIONS), fmt(e["total_score"]))
    table.add_section()
    table.add_row("[bold]Overall[/]", str(scores["valid"]), str(scores["failed"]), *[""] * len(DIMENSIONS),
                  f"[bold]{fmt(scores['overall'])}[/]")
    return table


def compare_table(a: dict[str, Any], b: dict[str, Any], names: tuple[str, str]) -> Table:
    table = Table(title=f"{names[1]} - {names[0]} (points)")
    for col in ("domain", *DIMENSIONS, "total"):
        table.add_column(col, justify="left" if col == "domain" else "right")

    def diff(x: float | None, y: float | None) -> str:
        if x is None or y is None:
            return "-"
        d = y - x
        return f"[green]+{d:.2f}[/]" if d > 0 else f"[red]{d:.2f}[/]" if d < 0 else "0.00"

    for domain in sorted(set(a["domains"]) | set(b["domains"])):
        ea, eb = a["domains"].get(domain, {}), b["domains"].get(domain, {})
        table.add_row(domain_title(domain), *(diff(ea.get(d), eb.get(d)) for d in (*DIMENSIONS, "total_score")))
    table.add_section()
    table.add_row("Overall", *[""] * len(DIMENSIONS), diff(a.get("overall"), b.get("overall")))
    return table


def side_by_side_table(runs: list[tuple[str, dict[str, Any]]]) -> Table:
    """Each run's total per domain next to the others, with each run's change over the one before it
    (runs in order: e.g. base, +CPT, +SFT, +RL) and the last run's change over the first."""
    table = Table(title="total score per run (points); (+x) = change over the previous column")
    table.add_column("domain")
    for name, _ in runs:
        table.add_column(name, justify="right")
    table.add_column(f"{runs[-1][0]} - {runs[0][0]}", justify="right")

    def cells(values: list[float | None]) -> list[str]:
        out = []
        for i, value in enumerate(values):
            text = "-" if value is None else f"{value:.2f}"
            if i and value is not None and values[i - 1] is not None:
                text += f" ({value - values[i - 1]:+.2f})"
            out.append(text)
        first, last = values[0], values[-1]
        gain = "-" if first is None or last is None else f"{last - first:+.2f}"
        return [*out, f"[green]{gain}[/]" if gain.startswith("+") and gain != "+0.00" else gain]

    domains = sorted({d for _, scores in runs for d in scores["domains"]})
    for domain in domains:
        table.add_row(domain_title(domain),
                      *cells([scores["domains"].get(domain, {}).get("total_score") for _, scores in runs]))
    table.add_section()
    table.add_row("Overall", *cells([scores.get("overall") for _, scores in runs]))
    return table


def paired_differences(first: dict[str, dict[str, Any]], last: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per domain, the samples both runs scored (valid in both), compared one by one: how many the second
    run won, tied and lost, the mean difference in points and its standard error. With ~10 samples a domain
    a few points are noise; this says how much."""
    pairs: dict[str, list[float]] = defaultdict(list)
    for sample_id, a in first.items():
        b = last.get(sample_id)
        if b is None or a.get("failed", 1.0) != 0.0 or b.get("failed", 1.0) != 0.0:
            continue
        pairs[domain_of(a)].append(normalize(b["total_score"]) - normalize(a["total_score"]))
    return {domain: paired(pairs[domain]) for domain in sorted(pairs)}


def paired_table(paired: dict[str, Any], names: tuple[str, str]) -> Table:
    table = Table(title=f"{names[1]} vs {names[0]}, sample by sample (total score, points)")
    for col in ("domain", "pairs", "won", "tied", "lost", "mean diff", "± s.e."):
        table.add_column(col, justify="left" if col == "domain" else "right")
    for domain, e in paired.items():
        colour = "green" if e["mean"] > 0 else "red" if e["mean"] < 0 else "white"
        table.add_row(domain_title(domain), str(e["n"]), str(e["wins"]), str(e["ties"]), str(e["losses"]),
                      f"[{colour}]{e['mean']:+.2f}[/]", "-" if e["se"] is None else f"{e['se']:.2f}")
    return table


FLOORS = {"copy_last": "copy-last (turns 2+: the previous real observation as the answer, judged alike)",
          "copy_retrieved": "copy-retrieved (the real observation after the nearest retrieved transition, never the "
                            "sample's own; samples where one was retrieved)"}


def skill_table(skill: dict[str, Any], floor: str = "copy_last") -> Table:
    table = Table(title=f"skill over {FLOORS[floor]}")
    for col in ("domain", "samples", "model", floor.replace("_", "-"), "skill (± paired s.e.)"):
        table.add_column(col, justify="left" if col == "domain" else "right")
    rows = [*skill["domains"].items(), *([("Overall", skill["overall"])] if skill["overall"] else [])]
    for domain, e in rows:
        colour = "green" if e["skill"] > 0 else "red"
        se = f" ± {e['se']:.2f}" if e.get("se") is not None else ""
        table.add_row(domain_title(domain), str(e["samples"]), f"{e['model']:.2f}", f"{e[floor]:.2f}",
                      f"[{colour}]{e['skill']:+.2f}[/]{se}")
    return table
