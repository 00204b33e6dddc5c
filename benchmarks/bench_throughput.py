"""lwm bench vs the published one-request-at-a-time loop, against a server with 200 ms latency.

Starts the scripted OpenAI-compatible server on 127.0.0.1 (200 ms per request) in its own process, as a
model server is (``--server thread`` runs it inside this process, where its CPU competes with the
client's for the interpreter lock), runs a sequential loop
over 256 samples (build the messages, one request, wait, next: what the published script does), then
``lwm bench infer`` on the same samples at concurrency 32 (cache off), checks that both produced the
same predictions, and prints the wall times and the speed ratio (target: at least 30x). A third row is a bare
asyncio + httpx2 client (no lwm: the same requests at the same concurrency): what any client gets from this
server, so lwm's own cost is its time over that one (the server's own CPU per request, serialised within a
round of 32, is what keeps both from the ceiling).
Usage: python benchmarks/bench_throughput.py [--samples 256] [--latency 0.2] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
from rich.console import Console
from rich.table import Table
from serve_throughput import free_port, start  # the sibling script: one way to start an lwm server process

from lwm.backends import GenerateConfig
from lwm.bench.run import infer, predictions
from lwm.bench.samples import BenchSample, load_samples
from lwm.parsing import parse_answer
from lwm.testing.openai_server import ScriptedServer
from lwm.worldmodel import WorldModel

DATA = Path(__file__).parents[1] / "data" / "bench-sample"


@contextlib.contextmanager
def server_process(latency: float) -> Iterator[str]:
    """``lwm testserver`` in a child process (started as serve_throughput.py starts its servers); its base URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    child = start(["testserver", "--port", str(port), "--latency", str(latency)], f"{url}/models", dict(os.environ))
    try:
        yield url
    finally:
        child.terminate()
        child.wait(10)


@contextlib.contextmanager
def server_thread(latency: float) -> Iterator[str]:
    with ScriptedServer(latency=latency) as server:
        yield server.base_url


def samples(count: int) -> list[BenchSample]:
    base = load_samples(DATA)
    out = []
    for i in range(count):  # repeat the sample bench with distinct ids and prompts until there are enough
        s = base[i % len(base)]
        copy = i // len(base)
        out.append(s.model_copy(update={"id": f"{s.id}#{copy}", "system_str": s.system_str + ("\n" * copy)}))
    return out


def sequential(items: list[BenchSample], base_url: str) -> dict[str, str]:
    predictions = {}
    with httpx.Client(base_url=base_url, timeout=60) as client:
        for s in items:
            body = {"model": "scripted", "messages": s.conversation().messages(), "temperature": 0.0,
                    "max_tokens": 2048, "seed": 0}
            text = client.post("/chat/completions", json=body).json()["choices"][0]["message"]["content"]
            predictions[s.id] = parse_answer(text).content
    return predictions


async def bare(items: list[BenchSample], base_url: str, concurrency: int) -> float:
    """Seconds for the same requests from a bare async client: no lwm between the loop and the socket."""
    bodies = [{"model": "scripted", "messages": s.conversation().messages(), "temperature": 0.0,
               "max_tokens": 2048, "seed": 0} for s in items]
    limit = asyncio.Semaphore(concurrency)
    pool = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=pool) as client:
        async def one(body: dict) -> None:
            async with limit:
                (await client.post("/chat/completions", json=body)).raise_for_status()

        start = time.perf_counter()
        await asyncio.gather(*(one(b) for b in bodies))
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=256, help="a multiple of --concurrency: N samples in "
                        "slots of C take ceil(N/C) rounds, so 200 at 32 cannot beat 200/7 = 28.6x")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--server", choices=("process", "thread"), default="process")
    args = parser.parse_args()
    console = Console()
    items = samples(args.samples)
    serving = server_process if args.server == "process" else server_thread
    with serving(args.latency) as base_url:
        with console.status(f"sequential loop over {len(items)} samples..."):
            start = time.perf_counter()
            reference = sequential(items, base_url)
            seq_s = time.perf_counter() - start
        out = Path(tempfile.mkdtemp(prefix="lwm-bench-throughput-"))
        # well_formed=False: the published loop sends one request per sample and keeps its answer as it is; lwm's
        # repairs (a JSON retry where the tool's results are JSON: the scripted server ignores response_format, so
        # 4 of 256 samples would be asked twice) are behaviour, not overhead, and would make the answers differ
        wm = WorldModel("openai:scripted", base_url=base_url, cache=False, concurrency=args.concurrency,
                        config=GenerateConfig(temperature=0.0, seed=0, max_tokens=2048), well_formed=False)
        with console.status(f"lwm bench infer at concurrency {args.concurrency}..."):
            start = time.perf_counter()
            asyncio.run(infer(items, wm, out, args.concurrency))
            lwm_s = time.perf_counter() - start
        with console.status(f"bare async client at concurrency {args.concurrency}..."):
            bare_s = asyncio.run(bare(items, base_url, args.concurrency))
    rows = predictions(out).by_id()
    identical = all(rows[i].prediction == p for i, p in reference.items()) and len(rows) == len(reference)
    table = Table(title=f"{len(items)} samples, server latency {args.latency * 1000:.0f} ms, server in a {args.server}")
    for col in ("runner", "wall s", "samples/s"):
        table.add_column(col, justify="right")
    table.add_row("sequential (published style)", f"{seq_s:.2f}", f"{len(items) / seq_s:.1f}")
    table.add_row(f"lwm bench infer, concurrency {args.concurrency}", f"{lwm_s:.2f}", f"{len(items) / lwm_s:.1f}")
    table.add_row(f"bare async client (no lwm), concurrency {args.concurrency}", f"{bare_s:.2f}",
                  f"{len(items) / bare_s:.1f}")
    console.print(table)
    ceiling = len(items) / -(-len(items) // args.concurrency)
    console.print(f"speed-up: [bold]{seq_s / lwm_s:.1f}x[/] (target >= 30x; ceiling {ceiling:.1f}x: "
                  f"{-(-len(items) // args.concurrency)} rounds of {args.concurrency}; a bare client gets "
                  f"{seq_s / bare_s:.1f}x from this server); lwm / bare client time: [bold]{lwm_s / bare_s:.3f}[/]; "
                  f"predictions identical: [bold]{'yes' if identical else 'NO'}[/]")


if __name__ == "__main__":
    main()
