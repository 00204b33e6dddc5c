"""Volatile values in observations (timestamps, dates, UUIDs, hashes, long numbers such as PIDs and sizes),
replaced by placeholders so that two observations compare by what they say: the rule judge scores masked texts
and the guard compares masked values."""

from __future__ import annotations

import re
from functools import lru_cache

_VOLATILE = re.compile(r"\b(?=[0-9A-Za-z])(?:" + "|".join([  # one boundary test, then the kinds: 4x faster
    r"(?P<uuid>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b)",
    r"(?P<datetime>\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b)",
    r"(?P<cal>(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun|Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?(?:\s+\d{1,2}\b)?)",
    r"(?P<time>\d{1,2}:\d{2}(?::\d{2})?\b)",
    r"(?P<hex>[0-9a-fA-F]{7,64}\b)",
    r"(?P<num>\d{4,}\b)",
]) + ")")


def _masked(match: re.Match) -> str:
    kind = match.lastgroup or "x"
    if kind == "hex":
        token = match.group(0)
        if token.isdigit():
            return "<num>"
        if token.isalpha():  # a word such as "deadbeef" or "acceded" is kept
            return token
    return f"<{kind}>"


@lru_cache(maxsize=8192)
def mask(text: str) -> str:
    """Volatile values replaced by placeholders (memoized: references and histories recur, e.g. as RL rewards)."""
    return _VOLATILE.sub(_masked, text)
