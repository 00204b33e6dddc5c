"""What a simulated step costs, per domain, for benchmark runs side by side: answer tokens (the packaged
tokenizer's count of each whole generation) and seconds per step (each prediction's own wall time), as
medians, and each run's ratio to the first run on the samples both have. Answers written as edits are counted
as written — what the model pays for — and how they were read (applied, malformed, whole) is shown too.

    python benchmarks/answer_cost.py runs/loso/base runs/loso/v3 [--per-domain]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def rows(run: Path) -> dict[str, dict]:
    with (run / "predictions.jsonl").open(encoding="utf-8") as handle:
        return {r["id"]: r for r in map(json.loads, handle) if r.get("gen") is not None and "seconds" in r}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path)
    args = parser.parse_args()
    from rich.console import Console
    from rich.table import Table
    from transformers import AutoTokenizer

    from lwm.edits import is_edit
    from lwm.parsing import parse_answer
    from lwm.train.base_model import base_model_dir

    tokenizer = AutoTokenizer.from_pretrained(base_model_dir("smollm2"))
    runs = {run.name: rows(run) for run in args.runs}
    shared = set.intersection(*(set(r) for r in runs.values()))
    if not shared:
        raise SystemExit("the runs share no predicted samples")
    table = Table(title=f"answer cost on the {len(shared)} samples every run has "
                        f"(medians; ratio to {args.runs[0].name})")
    for column in ("run", "domain", "samples", "answer tokens", "s / step", "tokens ratio", "time ratio", "edits"):
        table.add_column(column, justify="left" if column in ("run", "domain", "edits") else "right")
    first = args.runs[0].name
    for name, found in runs.items():
        by_domain: dict[str, list[tuple[int, float, bool]]] = defaultdict(list)
        for key in sorted(shared):
            row = found[key]
            tokens = len(tokenizer(row["gen"], add_special_tokens=False)["input_ids"])
            by_domain[row["task"]].append((tokens, float(row["seconds"]), is_edit(parse_answer(row["gen"]).content)))
        by_domain["all"] = [x for d in list(by_domain) for x in by_domain[d]]
        for domain, items in by_domain.items():
            tokens, seconds = statistics.median(t for t, _, _ in items), statistics.median(s for _, s, _ in items)
            base = [(len(tokenizer(runs[first][k]["gen"], add_special_tokens=False)["input_ids"]),
                     float(runs[first][k]["seconds"])) for k in sorted(shared)
                    if domain in ("all", runs[first][k]["task"])]
            ratio_t = tokens / max(statistics.median(t for t, _ in base), 1)
            ratio_s = seconds / max(statistics.median(s for _, s in base), 1e-9)
            edits = sum(e for _, _, e in items)
            table.add_row(name, domain, str(len(items)), f"{tokens:g}", f"{seconds:.1f}", f"{ratio_t:.2f}",
                          f"{ratio_s:.2f}", f"{edits}/{len(items)}")
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
