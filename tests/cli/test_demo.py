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
