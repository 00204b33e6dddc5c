"""lwm bench --protocol vs the published AgentWorldBench script, side by side on one server.

Needs a checkout of QwenLM/Qwen-AgentWorld (``--reference DIR``; nothing of it is copied into lwm) and the
``openai`` package. Starts the scripted OpenAI-compatible server on 127.0.0.1 (``--latency`` per request;
answers depend only on the messages: an observation for a world-model request, a verdict for a judge
request), then runs the published ``eval.py infer`` and ``eval.py judge`` and ``lwm bench run --protocol``
on the same samples, and prints:
- whether the requests are equal: every inference and judge request of one tool has an identical twin
  (messages byte for byte, model, temperature, max_tokens, no seed) among the other's;
- the scores per domain as each tool computes them, and each tool's score of the other's judged file;
- the total wall time of each tool, and the ratio.
Usage: python benchmarks/reference_side_by_side.py --reference ~/src/Qwen-AgentWorld [--data data/bench-sample]
       [--latency 0.05] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from lwm.bench.protocol import load_protocol
from lwm.testing.openai_server import ScriptedServer

DATA = Path(__file__).parents[1] / "data" / "bench-sample"
LWM = str(Path(sys.executable).parent / "lwm")


def answers(judge_prompts: set[str]):
    def answer(messages: list[dict[str, Any]]) -> str:
        digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).digest()
        if messages and messages[0]["content"] in judge_prompts:
            scores = {d: 1 + digest[i] % 5 for i, d in enumerate(
                ("format", "factuality", "consistency", "realism", "quality"))}
            return (f"Reasoning about the simulation.\n<final_evaluation>\n```json\n"
                    f'{json.dumps({"strengths": ["s"], "weaknesses": [], "scores": scores})}\n```\n</final_evaluation>')
        return (f"<think>predicting</think>\n<predicted_observation>\nobservation {digest.hex()[:12]}\n"
                "</predicted_observation>")
    return answer


def request_key(body: dict[str, Any]) -> str:
    return json.dumps({k: body.get(k) for k in ("model", "messages", "temperature", "max_tokens", "seed")},
                      sort_keys=True)


def timed(command: list[str], cwd: Path | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return time.perf_counter() - started, done.stdout + done.stderr


def published_totals(printed: str) -> dict[str, float]:
    """Per-domain total_score and the overall, from the published script's printout."""
    totals, domain = {}, None
    for line in printed.splitlines():
        if m := re.match(r"--- (\S+) \(", line):
            domain = m.group(1).lower()
        elif (m := re.match(r"\s+total_score: ([\d.]+)", line)) and domain:
            totals[domain] = float(m.group(1))
        elif m := re.match(r"Overall: ([\d.]+)", line):
            totals["overall"] = float(m.group(1))
    return totals


def lwm_totals(scores: dict[str, Any]) -> dict[str, float]:
    return {**{d: e["total_score"] for d, e in scores["domains"].items()}, "overall": scores["overall"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", type=Path, required=True, help="a checkout of QwenLM/Qwen-AgentWorld")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    console = Console(width=160)
    protocol = load_protocol(args.reference)
    work = Path(tempfile.mkdtemp(prefix="lwm-side-by-side-"))
    ref_out, lwm_out = work / "published", work / "lwm"
    with ScriptedServer(answers(set(protocol.judge_prompts.values())), latency=args.latency) as server:
        url = server.base_url
        ref_infer, _ = timed([sys.executable, "eval.py", "infer", "--data-dir", str(args.data.resolve()),
                              "--model-base-url", url, "--model-name", "scripted", "--output-dir", str(ref_out)],
                             cwd=args.reference / "eval")
        ref_requests = list(server.requests)
        ref_judge, printed = timed([sys.executable, "eval.py", "judge", "--predictions",
                                    str(ref_out / "predictions.jsonl"), "--judge-base-url", url, "--judge-model",
                                    "scripted", "--judge-api-key", "EMPTY", "--output-dir", str(ref_out)],
                                   cwd=args.reference / "eval")
        ref_judge_requests = server.requests[len(ref_requests):]
        start = len(server.requests)
        lwm_wall, _ = timed([LWM, "bench", "run", "--data", str(args.data), "--out", str(lwm_out), "--model",
                             "openai:scripted", "--base-url", url, "--judge", "openai:scripted", "--protocol",
                             str(args.reference), "--concurrency", str(args.concurrency)])
        lwm_requests = server.requests[start:]
    judge_prompts = set(protocol.judge_prompts.values())
    lwm_infer = [r for r in lwm_requests if r["messages"][0]["content"] not in judge_prompts]
    lwm_judge = [r for r in lwm_requests if r["messages"][0]["content"] in judge_prompts]
    same_infer = Counter(map(request_key, ref_requests)) == Counter(map(request_key, lwm_infer))
    same_judge = Counter(map(request_key, ref_judge_requests)) == Counter(map(request_key, lwm_judge))
    _, cross_ref = timed([sys.executable, "eval.py", "score", "--predictions", str(lwm_out / "judged.jsonl")],
                         cwd=args.reference / "eval")
    timed([LWM, "bench", "score", "--predictions", str(ref_out / "judged.jsonl"), "--out", str(work / "cross")])
    published = published_totals(printed)
    ours = lwm_totals(json.loads((lwm_out / "scores.json").read_text()))
    published_on_ours = published_totals(cross_ref)
    ours_on_published = lwm_totals(json.loads((work / "cross" / "scores.json").read_text()))

    table = Table(title=f"total score per domain ({args.data}, protocol {protocol.revision[:12]})")
    for col in ("domain", "published script", "lwm --protocol", "published script on lwm's judged.jsonl",
                "lwm on the published judged.jsonl"):
        table.add_column(col, justify="right")
    for domain in sorted(published, key=lambda d: (d == "overall", d)):
        table.add_row(domain, *(f"{t.get(domain, float('nan')):.2f}" for t in
                                (published, ours, published_on_ours, ours_on_published)))
    console.print(table)
    equal = all(abs(t.get(d, -1) - v) < 0.005 for d, v in published.items()
                for t in (ours, published_on_ours, ours_on_published))
    ref_wall = ref_infer + ref_judge
    console.print(f"inference requests: published {len(ref_requests)}, lwm {len(lwm_infer)}, identical: {same_infer}")
    console.print(f"judge requests: published {len(ref_judge_requests)}, lwm {len(lwm_judge)}, identical: {same_judge}")
    console.print(f"scores equal everywhere: {equal}")
    console.print(f"total wall time (infer + judge, {args.latency * 1000:.0f} ms per request): published "
                  f"{ref_wall:.1f} s ({ref_infer:.1f} + {ref_judge:.1f}), lwm {lwm_wall:.1f} s at concurrency "
                  f"{args.concurrency}: {ref_wall / lwm_wall:.1f}x")
    console.print(f"files kept in {work}")


if __name__ == "__main__":
    main()
