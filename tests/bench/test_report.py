"""report.html survives what real data holds (one enormous line, a many-MB observation), and reads in a browser."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from lwm.bench.report import SHOWN_CHARS, _label, bars_svg
from lwm.bench.rules import DIMENSIONS
from lwm.bench.samples import BenchSample, export_trajectories, write_samples
from lwm.cli import app
from lwm.envs.real.web import CHROMIUM, CHROMIUM_ARGS
from tests.samples import trajectory

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
    assert page.count("<details class='sample'") == 2 and "no line diff: a line is longer than" in page
    assert "more characters not shown" in page and len(page) < 10 * SHOWN_CHARS + 200_000  # not 60 MB


def test_bars_leave_out_what_was_not_measured():
    scores = {"domains": {"terminal": {"samples": 2, "valid": 2, "failed": 0, **dict.fromkeys(DIMENSIONS, 50.0),
                                       "total_score": 50.0},
                          "web": {"samples": 2, "valid": 0, "failed": 2, **dict.fromkeys(DIMENSIONS),
                                  "total_score": None}}}
    svg = bars_svg(scores)
    assert "no valid samples" in svg and ">0.0<" not in svg and svg.count("50.0") == len(DIMENSIONS) + 1


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="chromium not installed (make setup)")
def test_the_report_in_a_browser_shows_settings_actions_and_sorts_and_filters(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    trajectories = [trajectory(d).model_copy(update={"id": f"{d}-{i}"}) for d in ("terminal", "mcp") for i in range(2)]
    samples = export_trajectories(trajectories)
    write_samples(samples, tmp_path / "data")
    out = tmp_path / "run"
    result = runner.invoke(app, ["bench", "run", "--data", str(tmp_path / "data"), "--out", str(out), "--model", "mock"])
    assert result.exit_code == 0, result.output
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto((out / "report.html").as_uri())
        settings = page.locator("table.settings")
        assert settings.is_visible() and "infer model" in settings.inner_text() and "mock" in settings.inner_text()
        first = page.locator("details.sample summary").first.inner_text()
        sample = next(s for s in samples if first.endswith(s.id))
        assert _label(sample.current_prompt) in first and first.split()[0] in {"failed"} | {
            str(n) for n in range(101)}  # named by its action, its 0-100 score first
        page.select_option("#sort", "asc")
        shown = [float(s) for s in page.locator("details.sample").evaluate_all("es => es.map(e => e.dataset.score)")]
        assert shown == sorted(shown)
        page.select_option("#domain", "mcp")
        visible = page.locator("details.sample:not([hidden])")
        assert visible.count() == len([s for s in samples if s.domain == "mcp"])
        assert set(visible.evaluate_all("es => es.map(e => e.dataset.domain)")) == {"mcp"}
        assert page.locator("#count").inner_text() == f"{visible.count()} of {len(samples)} shown"
        text = settings.inner_text()  # every recorded setting, a temperature and seed of 0 too
        assert "infer temperature\t0.0" in text and "infer seed\t0" in text and "infer lwm" in text
        assert "infer started" in text and "judge judge\trules" in text
        assert page.locator("text=Skill over copy-last").is_visible()
        page.select_option("#domain", "")
        opened = page.locator("details.sample").nth(1)
        opened.locator("summary").click()
        action = opened.locator("pre").first.inner_text()
        assert "### Turn" not in action and "**Action:**" not in action  # the action, not the prompt's markup
        assert opened.locator("td.diff_next").count() == 0  # no difflib navigation links
        table, box = opened.locator("table.diff"), opened.bounding_box()
        assert table.bounding_box()["width"] <= box["width"] + 1  # the diff wraps inside the page
        browser.close()


def test_the_report_marks_answers_that_were_cut_fell_back_or_repaired(tmp_path):
    from lwm.bench.report import write_report

    samples = {f"s{i}": BenchSample(task="terminal", id=f"s{i}", prompt=["ls"], response=["a"], system_str="S",
                                    turn_idx=1) for i in range(3)}
    rows = [{"id": "s0", "prediction": "a", "finish_reason": "stop", "edit": {"status": "applied", "base": "previous"}},
            {"id": "s1", "prediction": "a", "finish_reason": "loop", "form": {"loop": {"cut": 12}}},
            {"id": "s2", "prediction": "", "finish_reason": "stop",
             "edit": {"status": "malformed", "base": "example 1", "error": "no example 1"},
             "form": {"empty": "previous"}}]
    scores = {"domains": {}, "overall": None, "valid": 3, "failed": 0}
    page = write_report(tmp_path / "r.html", scores, rows, samples).read_text()
    assert page.count("⚑</span>") == 2  # s1 (loop cut) and s2 (fell back), not the applied edit
    assert "its edit could not be applied (no example 1); fell back" in page and "cut after its first repeat" in page
    for counted in ("<td>edit applied</td><td>1</td>", "<td>edit malformed</td><td>1</td>",
                    "<td>finish loop</td><td>1</td>", "<td>loop cut</td><td>1</td>", "<td>empty previous</td><td>1</td>"):
        assert counted in page, counted
