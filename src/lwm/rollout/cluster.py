"""Work spread over a Ray cluster: one function mapped over items as Ray tasks, results coming back to the caller.

The caller writes every result itself (a trajectory, a prediction, an eval row), so nothing needs a folder that
every node can reach, a result is written once however often its task ran, and a task whose node died is run
again elsewhere by Ray (``max_retries``) while the others go on.

A node says how many sandboxed episodes it runs at once with a custom resource: ``ray start ... --resources
'{"lwm_sandbox": 4}'``; a task that opens a sandbox asks for one of them (only where the cluster declares the
resource: on a cluster without it, a task asks for a CPU only). A local cluster (no ``RAY_ADDRESS``) gets
``workers`` CPUs and as many sandbox slots.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

SANDBOX = "lwm_sandbox"
"""The custom resource a node's sandboxed episodes are counted against (``--resources '{"lwm_sandbox": N}'``)."""
RETRIES = 3
"""Times a task is run again when its worker or node died (not when it raised: that is its result)."""


def connect(workers: int = 1) -> Any:
    """Ray, connected: to the cluster ``RAY_ADDRESS`` names, or to a local one with ``workers`` CPUs."""
    try:
        import ray
    except ImportError as exc:
        raise RuntimeError("--executor ray needs Ray: pip install 'lwm[ray]'") from exc
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS")
        local = {} if address else {"num_cpus": max(1, workers), "resources": {SANDBOX: max(1, workers)}}
        ray.init(address=address, include_dashboard=False, log_to_driver=False, **local)
    return ray


def node_id() -> str | None:
    """The Ray node this process runs on (None outside Ray): which node ran an episode."""
    try:
        import ray
    except ImportError:
        return None
    return ray.get_runtime_context().get_node_id() if ray.is_initialized() else None


def remote_map(fn: Callable[[Item], Result], items: Iterable[Item], *, workers: int = 1, sandboxed: bool = False,
               retries: int = RETRIES) -> Iterator[tuple[Item, Result | BaseException]]:
    """``fn(item)`` for every item as Ray tasks, each ``(item, result)`` yielded as its task ends, in the order they
    end. A task that raised, or whose node died more than ``retries`` times, yields the exception instead."""
    ray = connect(workers)
    options: dict[str, Any] = {"num_cpus": 1, "max_retries": retries}
    if sandboxed and SANDBOX in ray.cluster_resources():
        options["resources"] = {SANDBOX: 1}
    task = ray.remote(**options)(fn)
    pending = {task.remote(item): item for item in items}
    while pending:
        (ready,), _ = ray.wait(list(pending), num_returns=1)
        item = pending.pop(ready)
        try:
            yield item, ray.get(ready)
        except Exception as exc:  # noqa: BLE001 - the task's error (RayTaskError wraps it) or its node's death
            yield item, exc


def nodes() -> list[dict[str, Any]]:
    """The cluster's live nodes: id, address and resources (for what a run says of where it ran)."""
    import ray

    return [{"id": n["NodeID"], "address": n["NodeManagerAddress"], "resources": n["Resources"]}
            for n in ray.nodes() if n.get("Alive")]
