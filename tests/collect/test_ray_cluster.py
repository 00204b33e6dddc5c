"""`lwm collect --executor ray` on a Ray cluster of two nodes, both on loopback: episodes spread over both nodes, at
most each node's sandbox slots at once, every trajectory written once, and a worker node killed mid-run costs
nothing but time (its episodes run again on the other node; its sandboxes go with it).

The nodes are separate Ray nodes (each its own raylet, object store and worker processes, the head with the GCS),
started with Ray's own ``ray.cluster_utils.Cluster``: ``ray start --address`` cannot add a node on loopback on
Linux (Ray replaces 127.0.0.1 with the machine's public address, and refuses worker nodes when told not to).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from lwm.data import read_trajectories
from lwm.testing.ray_nodes import RayNodes
from tests.envs.real.conftest import needs_sandbox
from tests.leftovers import leftovers
from tests.waiting import wait_for

pytest.importorskip("ray")
LWM = str(Path(sys.executable).parent / "lwm")


@pytest.fixture
def cluster():
    with RayNodes(2) as nodes:
        yield nodes


def collect(cluster: RayNodes, out: Path, episodes: int) -> subprocess.Popen:
    return subprocess.Popen([LWM, "collect", "--domain", "terminal", "--episodes", str(episodes), "--max-steps", "4",
                             "--executor", "ray", "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=cluster.env)


def lines(out: Path) -> list[str]:
    path = out / "trajectories.jsonl"
    return path.read_text().splitlines() if path.exists() else []


@needs_sandbox
@pytest.mark.slow
def test_a_collection_spreads_over_two_nodes_and_survives_losing_one(cluster, tmp_path):
    before = leftovers()
    run = collect(cluster, tmp_path / "both", 4)
    output = run.communicate(timeout=300)[0]
    assert run.returncode == 0, output
    per_node = re.findall(r"([0-9a-f]{8}) (\d+)", output.split("episodes per Ray node:")[1])
    assert [count for _, count in per_node] == ["2", "2"], output  # two nodes, one sandbox slot each

    run = collect(cluster, tmp_path / "killed", 6)
    assert wait_for(lambda: len(lines(tmp_path / "killed")) >= 1, 240), "no episode finished"
    cluster.kill()  # SIGKILL: its raylet, its workers, their episodes
    output = run.communicate(timeout=300)[0]
    assert run.returncode == 0, output
    ids = [t.id for t in read_trajectories(tmp_path / "killed")]
    assert len(lines(tmp_path / "killed")) == 6 and sorted(ids) == [f"terminal-s0-{i:05d}" for i in range(6)]
    assert all(len(t.turns) == 4 for t in read_trajectories(tmp_path / "killed"))
    assert wait_for(lambda: leftovers() <= before, 30), leftovers() - before


def test_without_a_sandbox_resource_a_task_asks_for_a_cpu_only(monkeypatch):
    """A cluster whose nodes declare no ``lwm_sandbox`` still runs episodes (one per CPU)."""
    from lwm.rollout import cluster as lwm_cluster

    asked: list[dict] = []

    class Remote:
        def remote(self, item):
            return item

    class FakeRay:
        def cluster_resources(self):
            return {"CPU": 4.0}

        def remote(self, **options):
            asked.append(options)
            return lambda fn: Remote()

        def wait(self, refs, num_returns):
            return [refs[0]], refs[1:]

        def get(self, ref):
            return ref * 10

    monkeypatch.setattr(lwm_cluster, "connect", lambda workers: FakeRay())
    assert sorted(lwm_cluster.remote_map(lambda x: x, [1, 2], sandboxed=True)) == [(1, 10), (2, 20)]
    assert asked == [{"num_cpus": 1, "max_retries": lwm_cluster.RETRIES}]


@pytest.mark.slow
def test_bench_inference_over_two_nodes_writes_each_row_once_as_a_local_run_does(cluster, tmp_path):
    from lwm.bench.rows import Prediction
    from lwm.data.jsonl import JsonlFile
    from lwm.testing.openai_server import ScriptedServer

    data = Path(__file__).parents[2] / "data" / "bench-sample"
    with ScriptedServer() as server:
        def bench(executor: str, out: Path) -> list[Prediction]:
            run = subprocess.run([LWM, "bench", "infer", "--data", str(data), "--limit", "3", "--concurrency", "2",
                                  "-m", "openai:scripted", "--base-url", server.base_url, "--no-cache",
                                  "--executor", executor, "--out", str(out)], capture_output=True, text=True,
                                 env={**cluster.env, "OPENAI_API_KEY": "x"},
                                 timeout=300)
            assert run.returncode == 0, run.stdout + run.stderr
            return list(JsonlFile(out / "predictions.jsonl", Prediction))

        spread, local = bench("ray", tmp_path / "ray"), bench("local", tmp_path / "local")
    assert len(spread) == len({r.key for r in spread}) == 18 and all(r.ok for r in spread)  # 3 a domain, once
    assert [(r.key, r.prediction) for r in spread] == [(r.key, r.prediction) for r in local]


@pytest.mark.slow
def test_agent_evaluation_over_two_nodes_gives_the_rows_and_trajectories_a_local_run_does(cluster, tmp_path):
    from lwm.agent.evaluate import EvalRow
    from lwm.data.jsonl import JsonlFile


    def evaluate(executor: str, out: Path) -> list[EvalRow]:
        run = subprocess.run([LWM, "agent", "eval", "--domain", "search", "--mode", "real", "--policy", "expert",
                              "--limit", "6", "--batch", "2", "--executor", executor, "--out", str(out)],
                             capture_output=True, text=True, env=cluster.env,
                             timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
        return list(JsonlFile(out / "results.jsonl", EvalRow))

    spread, local = evaluate("ray", tmp_path / "ray"), evaluate("local", tmp_path / "local")
    assert sorted((r.task, r.reward, r.steps, r.answer) for r in spread) == \
        sorted((r.task, r.reward, r.steps, r.answer) for r in local) and len(spread) == 6
    def episodes(out: Path) -> list[tuple[str, float]]:
        return sorted((t.provenance.extra["task"], t.provenance.extra["reward"]) for t in read_trajectories(out))

    assert episodes(tmp_path / "ray") == episodes(tmp_path / "local")
    assert len(lines(tmp_path / "ray")) == 6
