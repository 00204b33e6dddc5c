from pathlib import Path

import pytest
from typer.testing import CliRunner

from lwm.cli import app
from lwm.data import read_trajectories, write_trajectories
from lwm.data.sources import domain_counts, heldout_sources, source_of, split
from lwm.types import Provenance
from tests.samples import trajectory

runner = CliRunner()
CORPUS = Path(__file__).parents[2] / "data" / "samples" / "corpus-v1-sample.jsonl"


def made(domain: str, i: int, **provenance) -> object:
    return trajectory(domain).model_copy(update={"id": f"{domain}-{i}", "provenance": Provenance(**provenance)})


def test_each_domain_names_its_environment():
    by_id = {t.id: source_of(t) for t in read_trajectories(CORPUS)}
    assert by_id["mcp-memory-s0-00001"] == "mcp:memory-server"
    assert by_id["os-s0-00000"] == "os:mousepad"
    assert by_id["web-s0-00000"] == "web:shop.lwm.test"
    assert by_id["swe-s0-00000"] == "swe:calc"
    assert made("terminal", 0, extra={"source": "repl:python"}).provenance.extra["source"] == "repl:python"
    assert source_of(made("terminal", 0, extra={"source": "repl:python"})) == "repl:python"


def test_whole_sources_are_held_out_never_all_and_never_one_of_one():
    trajectories = [made("mcp", i, environment=f"mcp:server-{i % 5}") for i in range(20)]
    trajectories += [made("swe", i, environment="swe:calc") for i in range(4)]
    held = heldout_sources(trajectories, 0.4, seed=0)
    assert len(held["mcp"]) == 2 and held["swe"] == set()
    assert heldout_sources(trajectories, 0.4, seed=0) == held  # the same seed, the same sources
    assert all(len(heldout_sources(trajectories, f, seed=0)["mcp"]) in range(1, 5) for f in (0.01, 0.5, 0.99))


def test_split_by_source_keeps_every_source_on_one_side(tmp_path):
    trajectories = [made("mcp", i, environment=f"mcp:server-{i % 5}") for i in range(20)]
    write_trajectories(tmp_path / "in.jsonl", trajectories)
    result = runner.invoke(app, ["data", "split", str(tmp_path / "in.jsonl"), "--by", "source", "--heldout", "0.4",
                                 "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    train = {source_of(t) for t in read_trajectories(tmp_path / "out" / "train.jsonl")}
    heldout = {source_of(t) for t in read_trajectories(tmp_path / "out" / "heldout.jsonl")}
    assert len(heldout) == 2 and len(train) == 3 and not train & heldout
    stats = runner.invoke(app, ["data", "stats", str(tmp_path / "in.jsonl")])
    assert stats.exit_code == 0 and "sources" in stats.output


def test_kept_sources_stay_in_training_and_may_leave_every_other_source_held_out(tmp_path):
    trajectories = [made("mcp", i, environment=f"mcp:server-{i % 5}") for i in range(20)]
    keep = {"mcp:server-0", "mcp:server-1"}
    for seed in range(6):
        held = heldout_sources(trajectories, 0.99, seed, keep)["mcp"]
        assert held == {"mcp:server-2", "mcp:server-3", "mcp:server-4"}  # all but the kept: training has those
    assert len(heldout_sources(trajectories, 0.2, 0, keep)["mcp"]) == 1
    assert heldout_sources(trajectories, 0.5, 0, {f"mcp:server-{i}" for i in range(5)})["mcp"] == set()
    write_trajectories(tmp_path / "in.jsonl", trajectories)
    args = ["data", "split", str(tmp_path / "in.jsonl"), "--by", "source", "--heldout", "0.6", "--out",
            str(tmp_path / "out"), "--keep", "mcp:server-0", "--keep", "mcp:server-1"]
    assert runner.invoke(app, args).exit_code == 0
    train = {source_of(t) for t in read_trajectories(tmp_path / "out" / "train.jsonl")}
    assert keep <= train and len(train) == 2
    result = runner.invoke(app, [*args[:-4], "--keep", "mcp:nowhere"])
    assert result.exit_code == 2 and "mcp:nowhere" in result.output


def test_held_sources_make_the_same_held_out_file_after_the_corpus_grows(tmp_path):
    first = [made("mcp", i, environment=f"mcp:server-{i % 5}") for i in range(20)]
    grown = first + [made("mcp", 20 + i, environment=f"mcp:server-{5 + i % 4}") for i in range(8)]
    for name, trajectories in (("first", first), ("grown", grown)):
        write_trajectories(tmp_path / f"{name}.jsonl", trajectories)
    seeded = heldout_sources(first, 0.4, seed=0)["mcp"]
    assert heldout_sources(grown, 0.4, seed=0)["mcp"] != seeded  # a seeded share moves as sources are added
    hold = [option for source in sorted(seeded) for option in ("--hold", source)]
    for name in ("first", "grown"):
        result = runner.invoke(app, ["data", "split", str(tmp_path / f"{name}.jsonl"), "--by", "source", *hold,
                                     "--out", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
    assert (tmp_path / "first" / "heldout.jsonl").read_bytes() == (tmp_path / "grown" / "heldout.jsonl").read_bytes()
    assert {source_of(t) for t in read_trajectories(tmp_path / "grown" / "heldout.jsonl")} == seeded
    assert len(list(read_trajectories(tmp_path / "grown" / "train.jsonl"))) == 28 - 8
    both = runner.invoke(app, ["data", "split", str(tmp_path / "grown.jsonl"), "--by", "source", *hold[:2],
                               "--keep", hold[1], "--out", str(tmp_path / "x")])
    assert both.exit_code == 2 and "both name" in both.output
    unknown = runner.invoke(app, ["data", "split", str(tmp_path / "grown.jsonl"), "--by", "source",
                                  "--hold", "mcp:nowhere", "--out", str(tmp_path / "x")])
    assert unknown.exit_code == 2 and "--hold names sources the data does not have: mcp:nowhere" in unknown.output


def test_split_from_python_is_stable_per_trajectory_and_refuses_unknown_or_doubled_sources():
    trajectories = [made("mcp", i, environment=f"mcp:server-{i % 5}") for i in range(40)]
    by_trajectory = split(trajectories, 0.25, seed=3)
    assert len(by_trajectory.train) + len(by_trajectory.heldout) == 40 and 0 < len(by_trajectory.heldout) < 40
    assert split(list(reversed(trajectories)), 0.25, seed=3).heldout[::-1] == by_trajectory.heldout
    by_source = split(trajectories, 0.4, seed=0, by="source", hold=["mcp:server-1"])
    assert by_source.held_sources == {"mcp": {"mcp:server-1"}} and len(by_source.heldout) == 8
    with pytest.raises(ValueError, match="does not have: mcp:nowhere"):
        split(trajectories, 0.4, seed=0, by="source", keep=["mcp:nowhere"])
    with pytest.raises(ValueError, match="both name mcp:server-1"):
        split(trajectories, 0.4, seed=0, by="source", keep=["mcp:server-1"], hold=["mcp:server-1"])
    with pytest.raises(ValueError, match="--by must be"):
        split(trajectories, 0.4, seed=0, by="turn")


def test_domain_counts_are_per_domain_with_medians_and_distinct_sources():
    items = [made("mcp", 0, environment="mcp:time"), made("mcp", 1, environment="mcp:git"), made("terminal", 2)]
    counts = {c.domain: c for c in domain_counts(items)}
    assert sorted(counts) == ["mcp", "terminal"]
    assert counts["mcp"].trajectories == 2 and counts["mcp"].sources == 2 and counts["terminal"].sources == 1
    turns = len(items[0].turns)
    assert counts["mcp"].turns == 2 * turns and counts["mcp"].turns_median == turns
