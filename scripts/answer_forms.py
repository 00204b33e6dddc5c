"""The form of a run's MCP answers against the real results: issue 60's "zero non-JSON answers where the real
result is JSON", echoes of the action, and every repair ``lwm.forms`` made (``form`` in each prediction).

    python scripts/answer_forms.py RUN_DIR [RUN_DIR ...]      # folders of `lwm bench run --out` (judged rows)
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from lwm.bench.pipeline import judged_rows
from lwm.forms import echoes, is_error, is_json
from lwm.parsing import strip_marker
from lwm.retrieval import action_text


def real_of(row: dict) -> str:
    response = row.get("response")
    if isinstance(response, str) and response.startswith("["):
        try:
            response = json.loads(response)
        except ValueError:
            pass
    last = response[-1] if isinstance(response, list) else response
    return strip_marker(str(last or ""))


def main(runs: list[str]) -> None:
    table = Table(title="MCP answers against the real results")
    for column in ("run", "samples", "real JSON", "answered JSON", "not JSON where real JSON", "JSON where real "
                   "text", "echoes", "repairs"):
        table.add_column(column, justify="right")
    for run in runs:
        rows = [r for r in judged_rows(Path(run)).values() if r.get("task") == "mcp"]
        counts: Counter[str] = Counter()
        repairs: Counter[str] = Counter()
        for row in rows:
            real, answer = real_of(row), str(row.get("prediction") or "")
            if is_json(real) and not is_error(real):
                counts["real json"] += 1
                counts["answered json" if is_json(answer) else "missed"] += 1
            elif not is_error(real) and is_json(answer) and not is_json(real):
                counts["json for text"] += 1
            counts["echo"] += echoes(answer, action_text(str(row.get("current_prompt") or "")))
            form = row.get("form")
            form = json.loads(form) if isinstance(form, str) else form or {}
            repairs.update(f"{k} {v if isinstance(v, str) else 'cut'}" for k, v in form.items())
        table.add_row(Path(run).name, str(len(rows)), str(counts["real json"]), str(counts["answered json"]),
                      str(counts["missed"]), str(counts["json for text"]), str(counts["echo"]),
                      ", ".join(f"{k}: {n}" for k, n in sorted(repairs.items())) or "none")
    Console(width=160).print(table)


if __name__ == "__main__":
    main(sys.argv[1:])
