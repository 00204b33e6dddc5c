"""Task suites (lwm.rollout.tasks): lookups by id, the context a task's environment starts from, damaged suites
named."""

import pytest

from lwm.rollout import tasks as suites
from lwm.rollout.tasks import UnknownTaskError, get_task, task_context, tasks


def test_a_task_is_found_by_id_and_an_unknown_one_says_how_ids_look():
    task = get_task("mcp/memory-relation-0000")
    assert task.domain == "mcp" and task.check.kind == "state"
    with pytest.raises(UnknownTaskError, match="ids look like 'search/syscall-0007'"):
        get_task("mcp/nothing-0000")
    with pytest.raises(UnknownTaskError):
        get_task("chess/opening-0001")


def test_a_tasks_context_gets_its_tools_from_the_suite_or_the_engine():
    mcp = task_context(get_task("mcp/memory-relation-0000"))
    assert {"create_entities", "read_graph"} <= {t["name"] for t in mcp.tools}
    search = task_context(get_task("search/syscall-0004"))
    assert "web_search" in {t["name"] for t in search.tools}


def test_filters_by_split_and_family_keep_suite_order():
    heldout = tasks("mcp", "heldout", ["memory-entity"])
    assert heldout and all(t.split == "heldout" and t.family == "memory-entity" for t in heldout)
    ids = [t.id for t in tasks("mcp")]
    assert [t.id for t in heldout] == [i for i in ids if i in {t.id for t in heldout}]


def test_a_damaged_suite_is_named(tmp_path, monkeypatch):
    (tmp_path / "mcp-v9.jsonl").write_text('{"id": "mcp/x"}\n')
    monkeypatch.setattr(suites, "SUITES", tmp_path)
    with pytest.raises(ValueError, match=r"task suite .*mcp-v9.jsonl is damaged"):
        suites.load_suite("mcp", "v9")
    with pytest.raises(FileNotFoundError, match="lwm agent tasks build --domain mcp"):
        suites.load_suite("mcp", "v8")
