"""A Ray cluster of separate nodes on loopback, for tests and benchmarks of lwm's ``--executor ray``.

``python -m lwm.testing.ray_nodes --nodes 2`` starts a head node and ``nodes - 1`` worker nodes on this machine
(each its own raylet, object store and worker processes; the head also runs the GCS), each with ``--cpus`` CPUs
and as many ``lwm_sandbox`` slots, prints one JSON line ``{"address": ..., "env": {...}}`` (what a client needs in
its environment to connect), then reads commands from stdin: ``kill`` kills the last worker node outright (as a
machine that dies), ``quit`` (or the end of stdin) shuts the cluster down.

Ray's own ``cluster_utils.Cluster`` starts the nodes: ``ray start --address`` cannot add a node on loopback on
Linux (Ray swaps 127.0.0.1 for the machine's public address, and refuses worker nodes when told not to). The nodes
listen on 127.0.0.1 only, with token authentication.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import select
import subprocess
import sys

LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # the nodes on 127.0.0.1, not the public address
            "RAY_AUTH_MODE": "token",
            "RAY_health_check_period_ms": "500", "RAY_health_check_failure_threshold": "4"}  # a dead node in ~2 s


class RayNodes:
    """``with RayNodes(2) as nodes:`` a cluster in a child process (this process never imports Ray, so it can start
    one cluster after another); ``nodes.env`` is what a client process needs (``RAY_ADDRESS`` and the token)."""

    def __init__(self, nodes: int = 2, cpus: int = 1, start_timeout: float = 120.0):
        self.nodes, self.cpus, self.start_timeout = nodes, cpus, start_timeout
        self._child: subprocess.Popen[str] | None = None
        self.address = ""
        self.env: dict[str, str] = {}

    def __enter__(self) -> RayNodes:
        self._child = subprocess.Popen([sys.executable, "-m", "lwm.testing.ray_nodes", "--nodes", str(self.nodes),
                                        "--cpus", str(self.cpus)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, text=True)
        ready = self._line()
        self.address = ready["address"]
        self.env = {**os.environ, **ready["env"], "RAY_ADDRESS": self.address}
        return self

    def _line(self) -> dict:
        assert self._child is not None and self._child.stdout is not None
        ready, _, _ = select.select([self._child.stdout], [], [], self.start_timeout)
        line = self._child.stdout.readline() if ready else ""
        if not line:
            self.close()
            raise RuntimeError(f"the Ray cluster did not answer within {self.start_timeout:g} s")
        return json.loads(line)

    def kill(self) -> None:
        """Kill the last worker node outright (its raylet and workers, as a machine that dies)."""
        assert self._child is not None and self._child.stdin is not None
        self._child.stdin.write("kill\n")
        self._child.stdin.flush()
        self._line()

    def close(self) -> None:
        if self._child is None:
            return
        child, self._child = self._child, None
        try:
            if child.stdin is not None:
                child.stdin.write("quit\n")
                child.stdin.close()
            child.wait(60)
        except (OSError, subprocess.TimeoutExpired):
            child.kill()
            child.wait()

    def __exit__(self, *exc: object) -> None:
        self.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--cpus", type=int, default=1)
    args = parser.parse_args()
    env = {**LOOPBACK, "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    os.environ.update(env)  # before Ray is imported: it reads them once
    from ray.cluster_utils import Cluster

    resources = {"num_cpus": args.cpus, "resources": {"lwm_sandbox": args.cpus}}
    cluster = Cluster(initialize_head=True, head_node_args={**resources, "include_dashboard": False})
    try:
        workers = [cluster.add_node(**resources) for _ in range(args.nodes - 1)]
        cluster.wait_for_nodes()
        print(json.dumps({"address": cluster.address, "env": env}), flush=True)
        for line in sys.stdin:
            if line.strip() == "kill" and workers:
                cluster.remove_node(workers.pop(), allow_graceful=False)
                print(json.dumps({"killed": True}), flush=True)
            elif line.strip() == "quit":
                break
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    main()
