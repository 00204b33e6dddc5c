from typer.testing import CliRunner

from lwm.cli import app
from tests.envs.real.conftest import needs_sandbox, needs_tmux


def _demo(tmp_path, *args: str) -> str:
    result = CliRunner().invoke(app, ["demo", *args, "--out", str(tmp_path)], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    return result.output


@needs_sandbox
@needs_tmux
def test_demo_records_predicts_scores_and_reports(tmp_path):
    output = _demo(tmp_path, "--model", "mock")
    assert "No such file or directory" in output and "mock observation" in output
    assert "AgentWorldBench scores" in output  # the demo's run folder is a bench run's
    assert {p.name for p in tmp_path.iterdir()} >= {"predictions.jsonl", "judged.jsonl", "scores.json", "run.json"}
    report = (tmp_path / "report.html").read_text()
    assert report.count("<details class='sample'") == 7 and "<svg" in report
    # the settings, dates and skill over copy-last a bench report has
    assert "<th>demo model</th><td>mock</td>" in report and "<th>demo started</th>" in report
    assert "Skill over copy-last" in report and "skill over copy-last" in output
    assert "The model is" not in output  # the notes are for the embedded models


@needs_sandbox
@needs_tmux
def test_demo_on_the_default_model_is_lwm_mini_and_quotes_its_manifests_numbers(tmp_path):
    """The default is the best world model lwm ships; the note's numbers are read from its manifest, so they
    cannot drift from the shipped model's (the demo once quoted an older model's 52.8 vs 31.3)."""
    import json

    from lwm.backends.embedded import packaged_manifest

    output = _demo(tmp_path, "--max-tokens", "16")
    overall = packaged_manifest("lwm-mini")["loso_overall"]
    assert "lwm-mini" in json.loads((tmp_path / "run.json").read_text())["demo"]["model"]
    assert f"scores {overall['lwm-mini']} against its untrained base's {overall['base']}" in output
    assert "--model openai:NAME --base-url URL" in output and "52.8" not in output


def test_the_plain_base_is_reachable_by_name_and_said_to_be_untrained():
    from lwm.cli.demo import model_note

    assert "untrained base" in model_note("embedded:smollm2") and model_note("mock") is None
