"""Our aggregation against the published formula, computed independently on the same fixture."""

from collections import defaultdict
from statistics import mean

from lwm.bench.summary import aggregate

DIMS = ["format", "factuality", "consistency", "realism", "quality"]
ROWS = [
    {"id": "a", "task": "terminal", "failed": 0.0, "format": 5, "factuality": 4, "consistency": 4, "realism": 5,
     "quality": 3, "total_score": 4.2},
    {"id": "b", "task": "terminal", "failed": 0.0, "format": 3, "factuality": 2, "consistency": 3, "realism": 4,
     "quality": 2, "total_score": 2.8},
    {"id": "c", "task": "terminal", "failed": 1.0, "error_message": "Judge scoring failed"},
    {"id": "d", "task": "agentworld/mcp", "failed": 0.0, "format": 4, "factuality": 5, "consistency": 5,
     "realism": 4, "quality": 4, "total_score": 4.4},
    {"id": "e", "task": "mcp", "failed": 1.0},
    {"id": "f", "task": "search", "failed": 1.0},
]


def published(jobs):
    """The published aggregation: valid = failed == 0, values != 0, (mean - 1) / 4 * 100, overall over totals."""
    groups = defaultdict(list)
    for job in jobs:
        groups[job["task"].split("/")[-1] if "/" in job["task"] else job["task"]].append(job)
    result, totals = {}, []
    for task, items in groups.items():
        valid = [j for j in items if j.get("failed", 1.0) == 0.0]
        result[task] = {}
        for dim in DIMS + ["total_score"]:
            values = [j.get(dim, 0) for j in valid if j.get(dim, 0) != 0]
            result[task][dim] = (mean(values) - 1) / 4 * 100 if values else None
            if dim == "total_score":
                totals.extend(values)
    return result, (mean(totals) - 1) / 4 * 100


def test_same_numbers_as_the_published_formula():
    ours = aggregate(ROWS)
    theirs, overall = published(ROWS)
    assert ours["overall"] == round(overall, 2)
    for task, dims in theirs.items():
        for dim, value in dims.items():
            assert ours["domains"][task][dim] == (None if value is None else round(value, 2))
    assert (ours["samples"], ours["valid"], ours["failed"]) == (6, 3, 3)
    assert ours["domains"]["search"] == {"samples": 1, "valid": 0, "failed": 1, **{d: None for d in DIMS},
                                         "total_score": None}


def test_compare_prints_runs_side_by_side_with_stage_gains(tmp_path):
    import json

    from typer.testing import CliRunner

    from lwm.cli import app

    totals = {"base": (20.0, 30.0, 25.0), "sft": (35.5, 30.0, 32.0), "rl": (40.0, 28.0, 34.0)}
    for name, (term, web, overall) in totals.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "scores.json").write_text(json.dumps(
            {"domains": {"terminal": {"total_score": term}, "web": {"total_score": web}}, "overall": overall}))
    runner = CliRunner()
    result = runner.invoke(app, ["bench", "compare", *(str(tmp_path / n) for n in totals)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    terminal = next(line for line in result.output.splitlines() if "Terminal" in line or "terminal" in line)
    assert "20.00" in terminal and "35.50 (+15.50)" in terminal and "40.00 (+4.50)" in terminal and "+20.00" in terminal
    overall = next(line for line in result.output.splitlines() if "Overall" in line)
    assert "34.00 (+2.00)" in overall and "+9.00" in overall
    missing = runner.invoke(app, ["bench", "compare", str(tmp_path / "base"), str(tmp_path)])
    assert missing.exit_code != 0 and "no scores.json" in missing.output


def test_paired_differences_count_wins_and_standard_error():
    from lwm.bench.summary import paired_differences

    base = {i: {"id": i, "task": "terminal", "failed": 0.0, "total_score": 2.0} for i in "abcd"}
    base["e"] = {"id": "e", "task": "web", "failed": 1.0}
    new = {"a": {"task": "terminal", "failed": 0.0, "total_score": 3.0},
           "b": {"task": "terminal", "failed": 0.0, "total_score": 2.0},
           "c": {"task": "terminal", "failed": 0.0, "total_score": 1.0},
           "d": {"task": "terminal", "failed": 1.0},  # failed in one run: not a pair
           "e": {"task": "web", "failed": 0.0, "total_score": 5.0}}
    paired = paired_differences(base, new)
    assert list(paired) == ["terminal"]
    t = paired["terminal"]
    assert (t["n"], t["wins"], t["ties"], t["losses"]) == (3, 1, 1, 1)
    assert t["mean"] == 0.0 and abs(t["se"] - 25 / 3 ** 0.5) < 1e-9  # diffs +25, 0, -25 points: sd 25


def test_compare_uses_only_the_samples_every_run_has_and_refuses_runs_that_share_none(tmp_path):
    import json

    from typer.testing import CliRunner

    from lwm.cli import app

    def run(name, scores):
        folder = tmp_path / name
        folder.mkdir()
        rows = [{"id": i, "task": "terminal", "failed": 0.0, "total_score": s, **dict.fromkeys(DIMS, s)}
                for i, s in scores.items()]
        (folder / "judged.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (folder / "scores.json").write_text(json.dumps(aggregate(rows)))
        return str(folder)

    a = run("a", {"s1": 3.0, "s2": 3.0, "s3": 1.0})
    b = run("b", {"s1": 4.0, "s2": 3.0})  # s3, which pulls a down, was not run here
    c = run("c", {"x1": 5.0})
    runner = CliRunner()
    result = runner.invoke(app, ["bench", "compare", a, b], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "comparing on the 2 samples every run has (a has 3, b has 2)" in result.output
    *_, overall = (line for line in result.output.splitlines() if "Overall" in line)  # the side-by-side table
    assert "50.00" in overall and "62.50 (+12.50)" in overall  # a on s1, s2 only: (3 - 1) / 4
    none = runner.invoke(app, ["bench", "compare", a, c])
    assert none.exit_code == 2 and "share no samples" in none.output


def test_a_run_kept_in_git_with_compressed_judgements_compares_like_the_plain_run(tmp_path):
    """Committed LOSO runs (results/) keep judged.jsonl xz-compressed; the pairing must read them the same."""
    import json
    import lzma

    from lwm.bench.pipeline import compare

    rows = [{"id": i, "task": "swe", "failed": 0.0, "total_score": s, **dict.fromkeys(DIMS, s)}
            for i, s in (("s1", 3.0), ("s2", 2.0))]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    for name in ("plain", "kept"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "scores.json").write_text(json.dumps(aggregate(rows)))
    (tmp_path / "plain" / "judged.jsonl").write_text(text)
    with lzma.open(tmp_path / "kept" / "judged.jsonl.xz", "wt") as handle:
        handle.write(text)
    compared = compare([tmp_path / "plain", tmp_path / "kept"])
    assert compared.judged[0] == compared.judged[1] and set(compared.judged[1]) == {"s1", "s2"}
    assert compared.note is None
