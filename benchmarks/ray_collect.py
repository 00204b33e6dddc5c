"""The same collection on a Ray cluster of one node and of two, side by side in one run, and the two-node run again
with its worker node killed half-way.

Each node is a separate Ray node on loopback (its own raylet and worker processes; the head also runs the GCS),
started with Ray's ``cluster_utils.Cluster`` and given 1 CPU and 1 sandbox slot (``lwm_sandbox``): on this 2-core
box a node is one core. ``lwm collect --executor ray`` runs as a user runs it (its own process, ``RAY_ADDRESS``),
and its wall time is measured from its start to its end (Ray connection included; the cluster's start is not).
Prints each run's seconds, episodes per node, the 2-node / 1-node ratio (target <= 0.6) and whether every run
stored the same episode ids, each once.
Usage: python benchmarks/ray_collect.py [--domain terminal] [--episodes 12] [--max-steps 6] [--repeats 1]
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

LWM = str(Path(sys.executable).parent / "lwm")
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32),
            "RAY_health_check_period_ms": "500", "RAY_health_check_failure_threshold": "4"}


def collection(address: str, args: argparse.Namespace, out: Path, kill: object = None) -> tuple[float, str]:
    """Seconds ``lwm collect`` took, and its per-node line; with ``kill`` (a callable), called once the first
    episode is stored."""
    started = time.perf_counter()
    run = subprocess.Popen([LWM, "collect", "--domain", args.domain, "--episodes", str(args.episodes),
                            "--max-steps", str(args.max_steps), "--executor", "ray", "--out", str(out)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env={**os.environ, "RAY_ADDRESS": address})
    if kill is not None:
        stored = out / "trajectories.jsonl"
        while run.poll() is None and not (stored.exists() and stored.read_text().count("\n") >= 1):
            time.sleep(0.1)
        kill()
    output = run.communicate()[0]
    seconds = time.perf_counter() - started
    if run.returncode != 0:
        raise SystemExit(f"lwm collect failed:\n{output}")
    return seconds, output.split("episodes per Ray node:")[-1].strip()


def stored_ids(out: Path) -> tuple[list[str], int]:
    lines = (out / "trajectories.jsonl").read_text().splitlines()
    from lwm.data import read_trajectories

    return sorted(t.id for t in read_trajectories(out)), len(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domain", default="terminal")
    parser.add_argument("--episodes", type=int, default=12)
    parser.add_argument("--max-steps", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=1, help="runs of each cluster size, interleaved")
    args = parser.parse_args()
    os.environ.update(LOOPBACK)
    from ray.cluster_utils import Cluster

    console = Console()
    tmp = Path(tempfile.mkdtemp(prefix="ray-collect-"))
    walls: dict[str, list[float]] = {"1 node": [], "2 nodes": [], "2 nodes, worker killed": []}
    nodes: dict[str, str] = {}
    ids: dict[str, tuple[list[str], int]] = {}
    for repeat in range(args.repeats):
        for label in walls:
            cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {"lwm_sandbox": 1},
                                                                    "include_dashboard": False})
            try:
                worker = None if label == "1 node" else cluster.add_node(num_cpus=1, resources={"lwm_sandbox": 1})
                cluster.wait_for_nodes()
                out = tmp / f"{label.replace(' ', '-').replace(',', '')}-{repeat}"
                kill = (lambda c=cluster, w=worker: c.remove_node(w, allow_graceful=False)) if "killed" in label \
                    else None
                with console.status(f"run {repeat + 1}: {label}, {args.episodes} {args.domain} episodes..."):
                    seconds, nodes[label] = collection(cluster.address, args, out, kill)
                walls[label].append(seconds)
                ids[label] = stored_ids(out)
            finally:
                cluster.shutdown()
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
