"""The real search environment over Debian's document collections (dict-jargon, python3-doc, manpages)."""

import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lwm.envs.real.docsets import DOC_SETS
from lwm.envs.real.search import SearchEnv, SearchIndex, corpus_index
from lwm.envs.real.search_corpus import page_text
from lwm.provision import located

pytest.importorskip("bm25s")
needs = lambda path: pytest.mark.skipif(  # noqa: E731
    not located(Path(path)).exists(), reason=f"{path} missing (make setup)")


def call(name: str, **arguments) -> str:
    return json.dumps({"name": name, "arguments": arguments})


@pytest.fixture(scope="module")
def jargon(tmp_path_factory):
    cache = str(tmp_path_factory.mktemp("index"))
    env = SearchEnv(sources=["jargon"], cache_dir=cache)
    env.reset()
    return env


@needs("/usr/share/dictd/jargon.index")
def test_search_gives_ten_numbered_results_with_url_date_and_snippet(jargon):
    obs, _, _, _, info = jargon.step(call("web_search", query="hacker"))
    lines = obs.splitlines()
    assert lines[0] == "A search for 'hacker' found 10 results:" and lines[2] == "## Web Results"
    assert lines[3].startswith("1. [") and "](https://www.dict.org/bin/Dict?Form=Dict2&Database=jargon&Query=" in lines[3]
    assert lines[4] == "Date: N/A" and "hacker" in lines[5].lower()
    assert [int(m.group(1)) for m in map(re.compile(r"(\d+)\. \[").match, lines) if m] == list(range(1, 11))
    assert info["tool_error"] is False
    obs, *_ = jargon.step(call("web_search", query="kludge"))
    assert obs.splitlines()[3] == "1. [kludge](https://www.dict.org/bin/Dict?Form=Dict2&Database=jargon&Query=kludge)"


@needs("/usr/share/dictd/jargon.index")
def test_several_queries_and_no_results(jargon):
    obs, *_ = jargon.step(call("web_search", queries=["hacker ethic", "qqzzxv"]))
    first, second = obs.split("\n=======\n")
    assert first.startswith("A search for 'hacker ethic' found") and "hacker ethic" in first
    assert second == "No results found for 'qqzzxv'. Try a more general query."


@needs("/usr/share/dictd/jargon.index")
def test_extractor_returns_the_page_and_404s_unknown_urls(jargon):
    url = "https://www.dict.org/bin/Dict?Form=Dict2&Database=jargon&Query=kludge"
    obs, *_ = jargon.step(call("web_extractor", url=url))
    assert obs.startswith("# kludge\n\n") and len(obs) > 200
    obs, _, _, _, info = jargon.step(call("web_extractor", url="https://example.com/none"))
    assert obs == "Error: failed to fetch https://example.com/none: 404 Not Found" and info["tool_error"]


def test_memory_operations_behave_like_a_store(jargon):
    steps = [
        (dict(operation="add", key="a", value="1"), "Added 'a'."),
        (dict(operation="add", key="a", value="2"), "Error: key 'a' already exists; use update to change it"),
        (dict(operation="update", key="a", value="3"), "Updated 'a'."),
        (dict(operation="retrieve", key="a"), "3"),
        (dict(operation="retrieve_all"), '{\n  "a": "3"\n}'),
        (dict(operation="remove", key="b"), "Error: key 'b' not found"),
        (dict(operation="remove_all"), "Removed all 1 entries."),
        (dict(operation="retrieve_all"), "Memory is empty."),
    ]
    for arguments, expected in steps:
        assert jargon.step(call("dict_memory", **arguments))[0] == expected


@needs("/usr/share/dictd/jargon.index")
def test_index_is_saved_and_loaded_from_disk(tmp_path):
    built = corpus_index(("jargon",), 200, str(tmp_path))
    folders = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert len(folders) == 1 and not folders[0].name.endswith(".tmp")
    loaded = SearchIndex.load(folders[0])
    assert [d.url for d in loaded.docs] == [d.url for d in built.docs] and len(loaded.docs) == 200
    assert [d.title for d in loaded.search("hack")] == [d.title for d in built.search("hack")]


@needs("/usr/share/dictd/jargon.index")
def test_episodes_starting_in_threads_on_a_cold_cache_all_get_the_index(tmp_path):
    """A batch's environments start in threads: on a cold cache they used to build at once into one staging
    folder and all but one failed to start (the search suite's expert scored 0 on a fresh machine)."""
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda _: corpus_index(["jargon"], 150, str(tmp_path)), range(4)))
    assert all(index is got[0] for index in got) and len(got[0].docs) == 150
    folders = list(tmp_path.iterdir())
    assert len(folders) == 1 and not folders[0].name.endswith(".tmp")
    assert corpus_index(("jargon",), 150, str(tmp_path)) is got[0]  # a list or a tuple of sources: one index


@needs("/usr/share/doc/python3/html/library/asyncio-task.html")
def test_python_docs_pages_carry_their_public_urls(tmp_path):
    env = SearchEnv(sources=["python-docs"], cache_dir=str(tmp_path))
    env.reset()
    obs, *_ = env.step(call("web_search", query="asyncio task timeout"))
    assert "(https://docs.python.org/3/library/asyncio-task.html)" in obs
    page, *_ = env.step(call("web_extractor", url="https://docs.python.org/3/library/asyncio-task.html"))
    assert page.startswith("# Coroutines and Tasks") and "asyncio.timeout" in page


@needs(str(DOC_SETS["pytest-docs"].root / "how-to/fixtures.html"))
def test_each_sphinx_doc_set_is_a_corpus_of_its_own(tmp_path):
    env = SearchEnv(sources=["pytest-docs"], cache_dir=str(tmp_path))
    env.reset()
    obs, *_ = env.step(call("web_search", query="fixture teardown yield"))
    urls = re.findall(r"\((https?://[^)\s]+)\)", obs)
    assert urls and all(u.startswith("https://docs.pytest.org/en/stable/") for u in urls)
    assert "/_modules/" not in obs  # highlighted source listings are not documents
    page, *_ = env.step(call("web_extractor", url="https://docs.pytest.org/en/stable/how-to/fixtures.html"))
    assert page.startswith("# How to use fixtures") and "request fixtures" in page


@needs(str(DOC_SETS["tornado-docs"].root / "guide/async.html"))
def test_each_sphinx_theme_is_indexed_by_its_article_text_without_navigation(tmp_path):
    page = (DOC_SETS["tornado-docs"].root / "guide/async.html").read_text()
    title, text = page_text(page)
    assert "Search docs" in page and "Search docs" not in text  # the theme's sidebar is left out
    assert text.startswith("Asynchronous and non-Blocking I/O") and "single-threaded" in text
    assert title.startswith("Asynchronous and non-Blocking I/O")
    sidebar_first = (DOC_SETS["pygments-docs"].root / "docs/filterdevelopment.html").read_text()
    assert sidebar_first.index("sphinxsidebar") < sidebar_first.index('class="body"')  # a theme that puts it first
    assert page_text(sidebar_first)[1].startswith("Write your own filter ¶ New in version 0.7.")
    env = SearchEnv(sources=["tornado-docs"], cache_dir=str(tmp_path))
    env.reset()
    extracted, *_ = env.step(call("web_extractor", url="https://www.tornadoweb.org/en/stable/guide/async.html"))
    assert extracted.startswith("# Asynchronous and non-Blocking I/O") and "Search docs" not in extracted


@needs("/usr/share/man/man2/fork.2.gz")
def test_man_pages_are_man7_pages(tmp_path):
    env = SearchEnv(sources=["man"], cache_dir=str(tmp_path))
    env.reset()
    obs, *_ = env.step(call("web_search", query="fork create child process"))
    assert "(https://man7.org/linux/man-pages/man2/fork.2.html)" in obs


def test_an_upgraded_doc_set_changes_the_index_cache_key(tmp_path, monkeypatch):
    from lwm.envs.real import search
    from lwm.envs.real.docsets import DocSet

    monkeypatch.setitem(search.DOC_SETS, "some-docs", DocSet("https://docs.example.org/", tmp_path))
    before = search._source_stamp(("some-docs",))
    os.utime(tmp_path, (1_000_000, 1_000_000))  # the package's files replaced
    assert search._source_stamp(("some-docs",)) != before
    assert search._source_stamp(("man",)) == search._source_stamp(("jargon",))  # other sources: no folder of theirs
