"""The import graph of lwm (every import that runs, including those inside functions; not the annotations-only
imports under ``TYPE_CHECKING``): no cycles, and the core
below the benchmark, the CLI and the agent, so each layer can be used and tested without the ones above."""

from __future__ import annotations

import pytest

grimp = pytest.importorskip("grimp")

CORE = ("lwm.conversation", "lwm.worldmodel", "lwm.guard", "lwm.edits", "lwm.parsing", "lwm.retrieval",
        "lwm.types", "lwm.volatile", "lwm.runfolder", "lwm.cache", "lwm.registry")
ABOVE_CORE = ("lwm.bench", "lwm.cli", "lwm.agent", "lwm.collect", "lwm.serve")
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
