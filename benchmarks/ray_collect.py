"""The same collection on a Ray cluster of one node and of two, side by side in one run, and the two-node run again
with its worker node killed half-way.

Each node is a separate Ray node on loopback (its own raylet and worker processes; the head also runs the GCS),
started by ``lwm.testing.ray_nodes`` and given 1 CPU and 1 sandbox slot (``lwm_sandbox``): on this 2-core box a
node is one core. ``lwm collect --executor ray`` runs as a user runs it (its own process, ``RAY_ADDRESS``),
and its wall time is measured from its start to its end (Ray connection included; the cluster's start is not).
Prints each run's seconds, episodes per node, the 2-node / 1-node ratio (target <= 0.6) and whether every run
stored the same episode ids, each once.
Usage: python benchmarks/ray_collect.py [--domain terminal] [--episodes 24] [--max-steps 6] [--repeats 1]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from lwm.data import read_trajectories
from lwm.testing.ray_nodes import RayNodes

LWM = str(Path(sys.executable).parent / "lwm")


def collection(nodes: RayNodes, args: argparse.Namespace, out: Path, kill: bool = False) -> tuple[float, str]:
    """Seconds ``lwm collect`` took, and its per-node line; with ``kill``, the worker node is killed once the
    first episode is stored."""
    started = time.perf_counter()
    run = subprocess.Popen([LWM, "collect", "--domain", args.domain, "--episodes", str(args.episodes),
                            "--max-steps", str(args.max_steps), "--executor", "ray", "--out", str(out)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=nodes.env)
    if kill:
        stored = out / "trajectories.jsonl"
        while run.poll() is None and not (stored.exists() and stored.read_text().count("\n") >= 1):
            time.sleep(0.1)
        nodes.kill()
    output = run.communicate()[0]
    seconds = time.perf_counter() - started
    if run.returncode != 0:
        raise SystemExit(f"lwm collect failed:\n{output}")
    return seconds, output.split("episodes per Ray node:")[-1].splitlines()[0].strip()


def stored_ids(out: Path) -> tuple[list[str], int]:
    lines = (out / "trajectories.jsonl").read_text().splitlines()
    return sorted(t.id for t in read_trajectories(out)), len(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domain", default="terminal")
    parser.add_argument("--episodes", type=int, default=24)
    parser.add_argument("--max-steps", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=1, help="runs of each cluster size, interleaved")
    args = parser.parse_args()
    console = Console()
    tmp = Path(tempfile.mkdtemp(prefix="ray-collect-"))
    walls: dict[str, list[float]] = {"1 node": [], "2 nodes": [], "2 nodes, worker killed": []}
    nodes: dict[str, str] = {}
    ids: dict[str, tuple[list[str], int]] = {}
    for repeat in range(args.repeats):
        for label in walls:
            with RayNodes(1 if label == "1 node" else 2) as cluster:
                out = tmp / f"{label.replace(' ', '-').replace(',', '')}-{repeat}"
                with console.status(f"run {repeat + 1}: {label}, {args.episodes} {args.domain} episodes..."):
                    seconds, nodes[label] = collection(cluster, args, out, kill="killed" in label)
                walls[label].append(seconds)
                ids[label] = stored_ids(out)
    table = Table(title=f"lwm collect --executor ray: {args.episodes} {args.domain} episodes x {args.max_steps} "
                        "steps, a node = 1 CPU + 1 sandbox slot")
    for column in ("cluster", "median s", "each run s", "episodes per node (last run)", "episodes stored (lines)"):
        table.add_column(column, justify="right")
    for label, values in walls.items():
        table.add_row(label, f"{statistics.median(values):.1f}", " ".join(f"{v:.1f}" for v in values), nodes[label],
                      f"{len(set(ids[label][0]))} ({ids[label][1]})")
    console.print(table)
    one, two = statistics.median(walls["1 node"]), statistics.median(walls["2 nodes"])
    same = len({tuple(v[0]) for v in ids.values()}) == 1 and all(len(v[0]) == v[1] == args.episodes
                                                                  for v in ids.values())
    console.print(f"2 nodes / 1 node: [bold]{two / one:.2f}[/] (target <= 0.6); with the worker killed: "
                  f"{statistics.median(walls['2 nodes, worker killed']) / one:.2f}; same episodes, each stored once: "
                  f"[bold]{'yes' if same else 'NO'}[/]")


if __name__ == "__main__":
    main()
