"""The import graph of lwm (every import that runs, including those inside functions; not the annotations-only
imports under ``TYPE_CHECKING``): no cycles, and the core
below the benchmark, the CLI and the agent, so each layer can be used and tested without the ones above."""

from __future__ import annotations

import pytest

grimp = pytest.importorskip("grimp")

CORE = ("lwm.conversation", "lwm.worldmodel", "lwm.guard", "lwm.edits", "lwm.parsing", "lwm.retrieval",
        "lwm.types", "lwm.volatile", "lwm.runfolder", "lwm.cache", "lwm.registry")
ABOVE_CORE = ("lwm.bench", "lwm.cli", "lwm.agent", "lwm.collect", "lwm.serve", "lwm.rollout")
"""Not ``lwm.train``: the transformers backend loads a model the way training does (``train.common``)."""


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("lwm", cache_dir=None, exclude_type_checking_imports=True)


def _cycles(graph) -> list[tuple[str, ...]]:
    found = []
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back:
                found.append((module, *back))
    return found


def test_no_import_cycles(graph):
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle(tmp_path, monkeypatch):
    (tmp_path / "loop").mkdir()
    (tmp_path / "loop" / "__init__.py").write_text("")
    (tmp_path / "loop" / "a.py").write_text("def f():\n    from loop import b\n")
    (tmp_path / "loop" / "b.py").write_text("import loop.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _cycles(grimp.build_graph("loop", cache_dir=None)) == [("loop.a", "loop.b", "loop.a"),
                                                                    ("loop.b", "loop.a", "loop.b")]


@pytest.mark.parametrize("core", CORE)
def test_the_core_imports_nothing_above_it(graph, core):
    above = {m for m in graph.find_upstream_modules(core) if m.startswith(ABOVE_CORE)}
    assert above == set(), f"{core} imports {sorted(above)}"


LAYERS = (("lwm.cli",), ("lwm.bench", "lwm.collect", "lwm.agent", "lwm.serve", "lwm.train"), ("lwm.rollout",),
          ("lwm.envs", "lwm.backends", "lwm.domains", "lwm.data", "lwm.prompts", "lwm.provision", "lwm.testing"))
"""Package layers, highest first: a package imports only its own layer and those below (issue 48)."""
UPWARD_ALLOWED = {("lwm.backends.transformers", "lwm.train.common"), ("lwm.rollout.policies", "lwm.train.common")}
"""The transformers backend and ``hf:`` policies load a model exactly as training does (inside a function, when
used); moving that loader (and the base model's conversion it needs) down is left to do."""


def _upward(graph) -> set[tuple[str, str]]:
    level = {package: i for i, layer in enumerate(LAYERS) for package in layer}
    found = set()
    for module in graph.modules:
        mine = level.get(".".join(module.split(".")[:2]))
        for imported in graph.find_modules_directly_imported_by(module):
            theirs = level.get(".".join(imported.split(".")[:2]))
            if mine is not None and theirs is not None and theirs < mine:
                found.add((module, imported))
    return found


def test_packages_import_only_their_layer_and_below(graph):
    assert _upward(graph) - UPWARD_ALLOWED == set()
    assert _upward(graph) >= UPWARD_ALLOWED  # the allowance is still needed (else: remove it)


def test_the_layer_check_finds_an_upward_import():
    class Planted:
        modules = {"lwm.envs.sim", "lwm.bench.run"}

        @staticmethod
        def find_modules_directly_imported_by(module):
            return {"lwm.bench.run"} if module == "lwm.envs.sim" else set()

    assert _upward(Planted()) == {("lwm.envs.sim", "lwm.bench.run")}


def test_modules_stay_small():
    """One job per module (issue 48): none over 400 lines, the median near 100."""
    import statistics
    from pathlib import Path

    import lwm

    sizes = {str(p.relative_to(Path(lwm.__file__).parent)): len(p.read_text().splitlines())
             for p in Path(lwm.__file__).parent.rglob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 400} == {}
    assert statistics.median(sizes.values()) < 150
