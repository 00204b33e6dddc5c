"""The few statistics lwm reports: a mean with its standard error, and paired differences (the same items
scored twice), which is how two runs on the same tasks or samples are compared honestly."""

from __future__ import annotations

from collections.abc import Sequence
from math import sqrt
from statistics import mean, stdev
from typing import Any


def standard_error(values: Sequence[float]) -> float | None:
    return stdev(values) / sqrt(len(values)) if len(values) > 1 else None


def paired(differences: Sequence[float]) -> dict[str, Any]:
    """Second minus first, item by item: how many items the second won, tied and lost, the mean difference
    and its standard error."""
    d = list(differences)
    return {"n": len(d), "wins": sum(x > 0 for x in d), "ties": sum(x == 0 for x in d),
            "losses": sum(x < 0 for x in d), "mean": mean(d) if d else 0.0, "se": standard_error(d)}
