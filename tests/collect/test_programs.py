"""Program explorers (terminal REPLs and tools) and the corpus-v2 preset's sources."""

import random

import pytest

from lwm.collect.explorers.programs import PROGRAMS
from lwm.collect.presets import PRESETS, SWE_SDISTS, plan_preset
from lwm.collect.runner import EpisodeSpec, collect_episode
from lwm.data import read_trajectories
from lwm.data.sources import source_of
from lwm.registry import get
from lwm.types import Context
from tests.envs.real.conftest import needs_sandbox, needs_tmux


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_each_program_explorer_opens_its_program_then_works_it(program):
    explorer = get("explorer", f"terminal-{program}")(mistake_rate=0.3)
    explorer.start(random.Random(1), Context(), "user@sandbox:~$")
    actions = [explorer.act("") for _ in range(12)]
    assert explorer.source == f"terminal:{program}" and explorer.name == f"terminal-{program}-v1"
    assert all(a[0]["keystrokes"].endswith("\n") for a in actions)
    if PROGRAMS[program].start:
        assert actions[0][0]["keystrokes"] == PROGRAMS[program].start
    assert len({a[0]["keystrokes"] for a in actions}) > 3  # varied


def test_corpus_v2_plans_a_part_per_program_and_per_site(tmp_path):
    tags = [(p.domain, p.tag) for p in PRESETS["corpus-v2"]]  # each part pins its own settings
    assert len(tags) == len(set(tags))
    specs, _ = plan_preset("corpus-v2", 0, tmp_path)
    policies = {s.policy for s in specs if s.domain == "terminal"}
    assert policies == {"explorer", *(f"explorer:terminal-{p}" for p in PROGRAMS)}
    assert {s.env_options.get("start_url", "").split("/")[2] for s in specs if s.domain == "web"} >= {
        "git-scm.com", "www.sqlite.org", "docs.python.org", "shop.lwm.test", "flask.palletsprojects.com"}
    # one corpus per search part (none mixed, so each can be held out), one app per OS part, one project per SWE
    assert all(len(s.env_options["sources"]) == 1 for s in specs if s.domain == "search")
    assert {s.env_options["sources"][0] for s in specs if s.domain == "search"} >= {"man", "python-docs", "flask-docs"}
    assert {tuple(s.env_options.get("apps", ["mousepad"])) for s in specs if s.domain == "os"} >= {
        ("mousepad",), ("galculator",), ("gnumeric",)}
    assert {s.env_options.get("preset") for s in specs if s.domain == "mcp"} >= {
        "sqlite", "code-runner", "calculator", "duckdb", "shell"}
    projects = {s.env_options.get("project", "calc").split("/")[-1] for s in specs if s.domain == "swe"}
    assert len(projects) == 1 + len(SWE_SDISTS)


@needs_sandbox
@needs_tmux
def test_a_program_episode_records_its_program_as_the_source(tmp_path):
    result = collect_episode(EpisodeSpec("terminal", 0, 0, 4, str(tmp_path), {}, 0.0, "sqlite3",
                                     "explorer:terminal-sqlite3"))
    assert result.error is None and result.turns == 4
    [trajectory] = read_trajectories(tmp_path)
    assert source_of(trajectory) == "terminal:sqlite3" and "sqlite>" in trajectory.turns[0].observation.content


@needs_sandbox
@needs_tmux
@pytest.mark.parametrize(("program", "prompt"), [("lua", "Lua 5.4"), ("ruby", "=> "), ("units", "You have:")])
def test_a_repl_opens_and_answers_in_the_real_terminal(tmp_path, program, prompt):
    result = collect_episode(EpisodeSpec("terminal", 0, 0, 3, str(tmp_path), {}, 0.0, program,
                                     f"explorer:terminal-{program}"))
    assert result.error is None and result.turns == 3
    [trajectory] = read_trajectories(tmp_path)
    assert prompt in trajectory.turns[-1].observation.content
    assert "command not found" not in trajectory.turns[-1].observation.content


def test_a_preset_collects_only_the_parts_asked_for_with_the_whole_presets_episodes(tmp_path):
    whole, _ = plan_preset("corpus-v2", 0, tmp_path / "whole")
    some, _ = plan_preset("corpus-v2", 0, tmp_path / "some", parts=["terminal:ed", "web:git-docs"])
    assert {(s.domain, s.tag) for s in some} == {("terminal", "ed"), ("web", "git-docs")}
    assert [s.id for s in some] == [s.id for s in whole if (s.domain, s.tag) in {("terminal", "ed"),
                                                                                  ("web", "git-docs")}]
    with pytest.raises(ValueError, match="no part terminal:nope"):
        plan_preset("corpus-v2", 0, tmp_path / "x", parts=["terminal:nope"])
