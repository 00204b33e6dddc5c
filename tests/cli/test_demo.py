from typer.testing import CliRunner

from lwm.cli import app
from tests.envs.real.conftest import needs_sandbox, needs_tmux


@needs_sandbox
@needs_tmux
def test_demo_records_predicts_scores_and_reports(tmp_path):
    result = CliRunner().invoke(app, ["demo", "--model", "mock", "--out", str(tmp_path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "No such file or directory" in result.output and "mock observation" in result.output
    assert "rule scores (0-100)" in result.output
    report = (tmp_path / "report.html").read_text()
    assert report.count("<details class='sample'") == 7 and "<svg" in report
    assert "plain SmolLM2-135M" not in result.output  # the note is for the default model only


@needs_sandbox
@needs_tmux
def test_demo_on_the_default_model_says_what_it_can_and_cannot_do(tmp_path):
    result = CliRunner().invoke(app, ["demo", "--max-tokens", "16", "--out", str(tmp_path)], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    assert "plain SmolLM2-135M" in result.output and "--model openai:NAME --base-url URL" in result.output
