"""The consistency guard (lwm/guard.py): the ledger's facts, conflicts, repairs, and WorldModel(guard=True)."""

import asyncio
import json

from lwm.backends import MockBackend
from lwm.conversation import Conversation
from lwm.guard import Ledger, action_key, command_output
from lwm.worldmodel import WorldModel


def keys(command: str) -> str:
    return f"### Turn\n\n**Action:**\n```json\n{json.dumps([{'keystrokes': command + chr(10), 'duration': 0.3}])}\n```"


def call(tool: str, **arguments) -> str:
    return f"**Action:**\n```json\n{json.dumps({'name': tool, 'arguments': arguments})}\n```"


SCREEN = "user@sandbox:~$ whoami\nroot\nuser@sandbox:~$"


def test_actions_are_read_canonically_and_a_commands_output_is_cut_from_the_screen():
    assert action_key(keys("whoami")) == ('[{"keystrokes": "whoami\\n"}]', "whoami")
    assert action_key(call("read_graph"))[1] is None
    assert command_output(SCREEN + " pwd\n/home/user\nuser@sandbox:~$", "pwd") == "/home/user"
    assert command_output(SCREEN, "whoami") == "root"


def test_a_repeated_read_must_be_answered_alike_until_something_may_have_changed_it():
    ledger = Ledger.from_pairs([(keys("whoami"), SCREEN)])
    again = SCREEN + " whoami\nuser\nuser@sandbox:~$"
    assert [c.kind for c in ledger.conflicts(keys("whoami"), again)] == ["repeat"]
    assert not ledger.conflicts(keys("whoami"), SCREEN + " whoami\nroot\nuser@sandbox:~$")
    ledger.observe(keys("echo x > a.txt"), SCREEN)  # a write comes between: the old read may be stale
    assert not ledger.conflicts(keys("whoami"), again)


def test_entity_fields_stay_fixed_unless_an_action_names_the_entity_to_change_it():
    graph = json.dumps({"entities": [{"name": "alice", "entityType": "person"}]})
    changed = json.dumps({"entities": [{"name": "alice", "entityType": "robot"}]})
    ledger = Ledger.from_pairs([(call("read_graph"), graph)])
    [conflict] = ledger.conflicts(call("search_nodes", query="a"), changed)
    assert (conflict.kind, conflict.subject, conflict.expected) == ("entity", "name=alice.entityType", '"person"')
    assert not ledger.conflicts(call("update_entity", name="alice", entityType="robot"), changed)
    assert json.loads(ledger.repair(call("search_nodes", query="a"), changed))["entities"][0]["entityType"] == "person"
    # a repeated read of a tool server is repaired to its earlier answer
    assert ledger.repair(call("read_graph"), '{"entities": []}') == graph


def test_the_guard_samples_again_and_keeps_a_consistent_answer():
    """The scripted model contradicts itself first, then answers consistently; the guard asks again."""
    answers = iter(["<predicted_observation>user@sandbox:~$ whoami\nroot\nuser@sandbox:~$ whoami\nnobody\n"
                    "user@sandbox:~$</predicted_observation>",
                    "<predicted_observation>user@sandbox:~$ whoami\nroot\nuser@sandbox:~$ whoami\nroot\n"
                    "user@sandbox:~$</predicted_observation>"])
    backend = MockBackend(lambda messages: next(answers))
    wm = WorldModel(backend, cache=False, guard=True)
    conv = Conversation("system", [(keys("whoami"), SCREEN)], keys("whoami"))
    obs = asyncio.run(wm.complete(conv))
    assert obs.metadata["guard"] == {"conflicts": 1, "resamples": 1, "left": 0, "repaired": False}
    assert obs.content.endswith("whoami\nroot\nuser@sandbox:~$") and len(backend.calls) == 2
    plain = WorldModel(MockBackend(["<predicted_observation>x</predicted_observation>"]), cache=False)
    assert "guard" not in asyncio.run(plain.complete(conv)).metadata


def test_what_resampling_cannot_fix_is_repaired_where_certain():
    backend = MockBackend(['<predicted_observation>{"entities": []}</predicted_observation>'])
    wm = WorldModel(backend, cache=False, guard=True, guard_retries=1)
    graph = json.dumps({"entities": [{"name": "alice", "entityType": "person"}]})
    obs = asyncio.run(wm.complete(Conversation(None, [(call("read_graph"), graph)], call("read_graph"))))
    assert obs.content == graph and obs.metadata["guard"]["repaired"] and len(backend.calls) == 2


def test_real_observations_never_contradict_their_own_history():
    """No false alarms: on every later turn of the sample bench, the real answer agrees with its ledger."""
    from pathlib import Path

    from lwm.bench.samples import load_samples

    samples = [s for s in load_samples(Path(__file__).parents[1] / "data" / "bench-sample") if s.turn_idx >= 2]
    ledgers = [(s, Ledger.from_pairs(s.history)) for s in samples]
    assert sum(1 for _, ledger in ledgers if ledger.reads or ledger.facts) > 50
    assert not [s.id for s, ledger in ledgers if ledger.conflicts(s.conversation().current or "", s.reference)]
