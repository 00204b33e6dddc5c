"""A third-party domain, installed as a package of its own (one module plus its prompts folder, an entry point
in ``lwm.plugins``), used through ``lwm simulate`` and ``gymnasium.make`` without touching lwm."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

README = Path(__file__).parents[1] / "README.md"


def readme_package() -> dict[str, str]:
    """The files of README's "A domain of your own", as written there: each fenced block whose first line is
    ``# <path>`` is that file."""
    section = README.read_text().split("### A domain of your own", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    files = {}
    for block in re.findall(r"```[a-z]*\n(.*?)```", section, re.DOTALL):
        first, _, body = block.partition("\n")
        if first.startswith("# ") and "/" in first or first.strip() == "# pyproject.toml":
            files[first[2:].strip()] = body
    return files


def install(files: dict[str, str], root: Path) -> Path:
    """A package of ``files`` (path -> text) built and installed (pip, no network) into ``root``/site; the
    source is removed, so what runs is the installed copy."""
    source = root / "src"
    for name, text in files.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text)
    site = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(site), str(source)], check=True, capture_output=True)
    shutil.rmtree(source)
    return site


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> Path:
    """README's plugin package, installed into a folder of its own."""
    files = readme_package()
    assert set(files) == {"lwm_kanban/domain.py", "lwm_kanban/prompts/kanban/system_prompt.txt", "pyproject.toml"}
    return install({**files, "lwm_kanban/__init__.py": ""}, tmp_path_factory.mktemp("plugin"))


def _env(site: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(site), "LWM_CACHE_DIR": str(site.parent / "cache")}


def test_lwm_simulate_runs_the_plugin_domain(plugin):
    lwm = str(Path(sys.executable).with_name("lwm"))
    done = subprocess.run([lwm, "simulate", "--domain", "kanban", "--model", "mock", "--json", "--no-cache",
                           "--action", '{"move": "card-1", "to": "done"}'], capture_output=True, text=True,
                          env=_env(plugin), timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["observation"].startswith("mock observation")
    bad = subprocess.run([lwm, "simulate", "--domain", "kanban", "--model", "mock", "--action", '{"drop": 1}'],
                         capture_output=True, text=True, env=_env(plugin), timeout=120)
    assert bad.returncode == 2 and "kanban actions look like" in bad.stderr


def test_gymnasium_make_gives_the_plugin_domain_with_its_own_prompt(plugin):
    script = textwrap.dedent('''
        import gymnasium as gym
        import lwm
        from lwm.backends.mock import MockBackend

        backend = MockBackend()
        env = gym.make("lwm/KanbanBoard-v0", world_model=lwm.WorldModel(backend, cache=False))
        env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step('{"move": "card-1", "to": "done"}')
        print(obs.startswith("mock observation"), "lwm/KanbanBoard-real-v0" not in gym.registry)
        print("kanban board in a small team's tracker" in backend.calls[-1][0]["content"])
    ''')
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=_env(plugin),
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True"]


def test_without_the_plugin_the_domain_is_unknown(plugin):
    done = subprocess.run([sys.executable, "-c", "import lwm; lwm.get_domain('kanban')"], capture_output=True,
                          text=True, env={**_env(plugin), "PYTHONPATH": ""}, timeout=120)
    assert done.returncode != 0 and "unknown domain 'kanban'" in done.stderr


@pytest.fixture(scope="module")
def bad_plugins(tmp_path_factory) -> Path:
    """One plugin that raises on import, one that exits (it once ended `lwm --help` silently) and one that
    registers a domain under lwm's own name `terminal`."""
    return install({"lwm_bad/__init__.py": "",
                    "lwm_bad/broken.py": "raise ImportError('lwm_bad.broken needs a module that is not there')\n",
                    "lwm_bad/exits.py": "raise SystemExit(3)\n",
                    "lwm_bad/clash.py": textwrap.dedent('''
        from lwm.domains.base import Domain
        from lwm.registry import register


        @register("domain")
        class Terminal(Domain):
            name = "terminal"
            title = "Not The Terminal"
            example_action = {}
    '''), "pyproject.toml": textwrap.dedent('''
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "lwm-bad"
        version = "0.1"

        [project.entry-points."lwm.plugins"]
        broken = "lwm_bad.broken"
        clash = "lwm_bad.clash"
        exits = "lwm_bad.exits"
    ''')}, tmp_path_factory.mktemp("bad-plugins"))


def test_a_broken_or_clashing_plugin_is_one_line_and_lwm_goes_on(bad_plugins):
    lwm = str(Path(sys.executable).with_name("lwm"))
    script = "import lwm; print(lwm.get_domain('terminal').title)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=_env(bad_plugins),
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "Terminal", done.stderr
    lines = done.stderr.strip().splitlines()
    assert any("plugin broken (lwm_bad.broken) skipped: ImportError" in line for line in lines), lines
    assert any("plugin exits (lwm_bad.exits) skipped: SystemExit: 3" in line for line in lines), lines
    assert any("lwm.domains.terminal.Terminal" in line and "lwm_bad.clash.Terminal" in line for line in lines), lines
    assert "Traceback" not in done.stderr
    for args in (["--help"], ["models"]):
        shown = subprocess.run([lwm, *args], capture_output=True, text=True, env=_env(bad_plugins), timeout=120)
        assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr


def test_a_plugin_installed_without_its_prompts_says_how_to_ship_them(tmp_path):
    """Without package-data the prompts are not installed: one line naming the missing file and the fix, not a
    FileNotFoundError traceback that points at lwm's own prompts folder."""
    files = readme_package()
    files["pyproject.toml"] = files["pyproject.toml"].split("[tool.setuptools.package-data]")[0]
    site = install({**files, "lwm_kanban/__init__.py": ""}, tmp_path)
    lwm = str(Path(sys.executable).with_name("lwm"))
    done = subprocess.run([lwm, "simulate", "--domain", "kanban", "--model", "mock", "--no-cache",
                           "--action", '{"move": "card-1", "to": "done"}'], capture_output=True, text=True,
                          env=_env(site), timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr[-800:]
    assert "system_prompt.txt is missing" in done.stderr and "package-data" in done.stderr
    assert "{context}" in done.stderr
