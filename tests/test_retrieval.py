"""Retrieved real transitions: nearest by action, never from held-out sources or the session's own trajectory."""

import pytest

from lwm.backends import MockBackend
from lwm.bench.data import export_trajectories
from lwm.parsing import strip_marker
from lwm.retrieval import TransitionIndex, action_text, transitions
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
    assert "Example 1 (terminal:perl)" in "".join(m[0]["content"] for m in backend.calls)
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
