"""WideSearch-style tables: reading an agent's answer table and scoring it item by item.

An answer is a Markdown table (a header row, an optional ``---`` row, one row per entity) or a JSON
list of objects. Cells are normalised before matching: Unicode NFKC, lower case, Markdown emphasis,
code ticks and surrounding quotes/punctuation removed, whitespace collapsed. Rows are matched by the
key column (the first gold column, normalised). Every cell of a matched row is an item: a cell is
right when its normalised text equals the gold's, or — for the columns a task marks as free text —
when their word-level F1 is at least ``TEXT_F1``. Item precision = right items / items in the answer,
recall = right items / items in the gold, and the reward is their F1 (0 for an empty or unreadable answer).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

TEXT_F1 = 0.8
Row = dict[str, str]


def normalize(cell: object) -> str:
    text = unicodedata.normalize("NFKC", str(cell)).lower()
    text = re.sub(r"[*_`]+", "", text)
    text = re.sub(r"\s+", " ", text).strip()
    return text.strip(" \"'.,;:()[]")


def _word_f1(a: str, b: str) -> float:
    wa, wb = Counter(re.findall(r"\w+", a)), Counter(re.findall(r"\w+", b))
    common = sum((wa & wb).values())
    if not common:
        return 0.0
    precision, recall = common / sum(wa.values()), common / sum(wb.values())
    return 2 * precision * recall / (precision + recall)


def parse_table(answer: str) -> list[Row]:
    """The rows of a Markdown table (or a JSON list of objects) in ``answer``; [] when there is none."""
    text = answer.strip()
    if text.startswith("["):
        try:
            data = json.loads(text)
            if isinstance(data, list) and all(isinstance(r, dict) for r in data):
                return [{normalize(k): str(v) for k, v in r.items()} for r in data]
        except ValueError:
            pass
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("|") or line.count("|") >= 1]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    rows = [r for r in rows if not all(re.fullmatch(r":?-{2,}:?", c) or not c for c in r)]
    if len(rows) < 2:
        return []
    header = [normalize(h) for h in rows[0]]
    return [dict(zip(header, r, strict=False)) for r in rows[1:]]


def item_f1(answer: str, gold: Sequence[Row], columns: Sequence[str], text_columns: Sequence[str] = ()) -> float:
    """Item-level F1 of ``answer`` against ``gold`` over ``columns`` (the first is the key)."""
    predicted = parse_table(answer)
    if not predicted or not gold:
        return 0.0
    cols = [normalize(c) for c in columns]
    key, text_cols = cols[0], {normalize(c) for c in text_columns}
    gold_rows = {normalize(r[columns[0]]): {normalize(c): normalize(r[c]) for c in columns} for r in gold}
    right, seen = 0, set()
    for row in predicted:
        cells = {c: normalize(row.get(c, "")) for c in cols}
        target = gold_rows.get(cells[key])
        if target is None or cells[key] in seen:
            continue
        seen.add(cells[key])
        for c in cols:
            value, expected = cells[c], target[c]
            if value == expected or (c in text_cols and value and _word_f1(value, expected) >= TEXT_F1):
                right += 1
    answered = sum(1 for row in predicted for c in cols if normalize(row.get(c, "")))
    precision = right / answered if answered else 0.0
    recall = right / (len(gold_rows) * len(cols))
    return 0.0 if not right else 2 * precision * recall / (precision + recall)


def to_markdown(rows: Sequence[Row], columns: Sequence[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)
