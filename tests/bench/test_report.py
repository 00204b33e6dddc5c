"""report.html survives what real data holds: one enormous line, a many-MB observation."""

from typer.testing import CliRunner

from lwm.bench.data import BenchSample, write_samples
from lwm.bench.report import SHOWN_CHARS
from lwm.cli import app

runner = CliRunner()


def test_a_huge_line_and_a_huge_observation_still_make_a_readable_report(tmp_path):
    line, flood = "x" * 100_000, "\n".join(f"line {i} " + "y" * 100 for i in range(20_000))  # ~2 MB
    samples = [BenchSample(task="terminal", id=f"s{i}", prompt=["ls"], response=[text], system_str="S", turn_idx=1)
               for i, text in enumerate((line, flood))]
    write_samples(samples, tmp_path / "data")
    out = tmp_path / "run"
    result = runner.invoke(app, ["bench", "run", "--data", str(tmp_path / "data"), "--out", str(out),
                                 "--model", "mock"])
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text()
    assert page.count("<details>") == 2 and "no line diff: a line is longer than" in page
    assert "more characters not shown" in page and len(page) < 10 * SHOWN_CHARS + 200_000  # not 60 MB
