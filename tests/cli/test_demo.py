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
    assert "plain SmolLM2-135M" not in output  # the note is for the default model only


@needs_sandbox
@needs_tmux
def test_demo_on_the_default_model_says_what_it_can_and_cannot_do(tmp_path):
    output = _demo(tmp_path, "--max-tokens", "16")
    assert "plain SmolLM2-135M" in output and "--model openai:NAME --base-url URL" in output
