"""lwm setup: what the real environments need, in lwm's data folder; and lwm from a wheel, outside the checkout."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lwm import provision
from lwm.cli import app

runner = CliRunner()


def test_an_empty_data_folder_lists_every_part_missing_and_check_installs_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("LWM_DATA_DIR", str(tmp_path / "data"))
    result = runner.invoke(app, ["setup", "mcp", "swe", "--check"])
    assert result.exit_code == 1, result.output
    assert result.output.count("missing") >= 3 and str(tmp_path / "data") in result.output.replace("\n", "")
    assert not (tmp_path / "data").exists()  # --check changes nothing
    assert runner.invoke(app, ["setup", "nosuch"]).exit_code == 2


def test_a_provisioned_server_that_is_missing_says_which_setup_installs_it(tmp_path, monkeypatch):
    from lwm.envs.real.mcp import _command_path

    monkeypatch.setenv("LWM_DATA_DIR", str(tmp_path))
    with pytest.raises(provision.NotProvisioned, match="run `lwm setup mcp`"):
        _command_path(str(provision.npm_bin() / "mcp-server-memory"))
    assert _command_path("/bin/sh") == "/bin/sh"  # any other path is the user's own


def test_the_swe_projects_are_the_pinned_ones_in_the_data_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("LWM_DATA_DIR", str(tmp_path))
    assert len(provision.swe_projects()) == len(provision.swe_sdists()) >= 10
    assert all(p.parent == tmp_path / "swe" / "sdists" for p in provision.swe_sdists())
    from lwm.envs.real.swe import SWEEnv

    with pytest.raises(FileNotFoundError, match="run `lwm setup swe`"):
        SWEEnv(provision.swe_sdists()[0])


@pytest.mark.skipif(shutil.which("apt-get") is None, reason="no apt here")
def test_apt_installs_only_what_is_named_and_upgrades_nothing():
    line = provision.apt_line(["tmux"])
    assert "--no-upgrade" in line and "--no-install-recommends" in line and line[-1] == "tmux"
    present = [p for p in ("tmux", "bash") if provision.installed(p)]
    assert present and provision.apt_upgrades(present) == []  # installed ones: nothing to do, nothing upgraded
    assert provision.missing_system(["terminal"]) == [p for p in provision.SYSTEM["terminal"]
                                                      if not provision.installed(p)]


def test_only_an_installed_version_in_brackets_counts_as_an_upgrade():
    """A new install's line carries its architecture in brackets too (``[amd64]``): reading that as an upgrade
    held back every missing package on a fresh machine, bubblewrap included."""
    simulated = """Inst bubblewrap (0.8.0-2+deb12u1 Debian:12.15/oldstable, Debian-Security:12/oldstable-security [amd64])
Inst bash [5.2.15-2+b2] (5.2.15-2+b7 Debian:12.15/oldstable [amd64])
Conf bubblewrap (0.8.0-2+deb12u1 Debian:12.15/oldstable [amd64])
Inst dc (1.07.1-3+b1 Debian:12.15/oldstable [amd64])"""
    assert provision.upgraded_in(simulated) == ["bash"]
    if shutil.which("apt-get") and not provision.installed("dc"):  # a real simulation of a package not here
        assert provision.apt_upgrades(["dc"]) == []


def test_a_package_whose_install_would_upgrade_others_is_held_back_and_named(monkeypatch):
    """bash-doc once pulled a newer bash (and python3.11 came along): such a package is left out, with why."""
    would = {"bash-doc": ["bash"], "tmux": []}
    monkeypatch.setattr(provision, "apt_upgrades", lambda packages: sorted({u for p in packages for u in would[p]}))
    assert provision.split_upgrades(["tmux", "bash-doc"]) == (["tmux"], {"bash-doc": ["bash"]})
    assert provision.split_upgrades(["tmux"]) == (["tmux"], {})


def test_every_pin_has_its_hashes_and_a_stored_file_counts_only_if_it_matches(tmp_path, monkeypatch):
    """A stored sdist once counted as ready if the file existed; now its sha256 must be the pinned one."""
    for pins in (provision.PINS / "pypi" / "requirements.txt", provision.PINS / "swe" / "projects.txt"):
        hashes = provision.pinned_hashes(pins)
        assert hashes and all(len(h) >= 1 and all(len(x) == 64 for x in h) for h in hashes.values()), pins
    monkeypatch.setenv("LWM_DATA_DIR", str(tmp_path))
    (swe,) = [p for p in provision.PARTS if p.name == "swe-projects"]
    for file in provision.swe_sdists():
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(b"not the project")
    assert not swe.ready()
    first = provision.swe_sdists()[0]
    assert f"{first.name} is not the pinned file" in swe.problems()[0]
    result = runner.invoke(app, ["setup", "swe", "--check", "--no-system"])
    assert result.exit_code == 1 and first.name[:20] in result.output  # the table names the tampered file
    from lwm.envs.real.swe import SWEEnv

    with pytest.raises(provision.NotProvisioned, match=f"{first.name} is not the pinned file.*lwm setup swe"):
        SWEEnv(first)  # checked where it is used, not only when fetched


def test_an_install_step_has_a_deadline_and_leaves_no_process(tmp_path):
    import time

    marker = f"lwm-deadline-probe-{time.time_ns()}"
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="took longer than 1 s"):
        provision.run_step(["sh", "-c", f"sleep 60 # {marker}"], lambda _: None, deadline=1)
    assert time.monotonic() - started < 10
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert left == []


def test_installs_verify_hashes_and_run_no_install_code(tmp_path, monkeypatch):
    """What each part runs (the real installs are exercised by `lwm setup`; tests have no network)."""
    ran = []
    monkeypatch.setattr(provision, "run_step", lambda argv, say, **_: ran.append(argv))
    monkeypatch.setattr(provision, "_stamp", lambda *_: None)
    monkeypatch.setenv("LWM_DATA_DIR", str(tmp_path))
    for part in provision.PARTS:
        if part.name != "swe-projects":
            part.install(lambda _: None)
    npm = next(a for a in ran if a[0] == "npm")
    pip = next(a for a in ran if "pip" in a)
    assert "ci" in npm and "--ignore-scripts" in npm
    assert "--require-hashes" in pip and pip[pip.index("--only-binary") + 1] == ":all:"


def test_a_failed_steps_cause_is_one_line_and_a_certificate_error_names_the_settings():
    npm = """npm error code SELF_SIGNED_CERT_IN_CHAIN
npm error errno SELF_SIGNED_CERT_IN_CHAIN
npm error request to https://registry.example/@scope%2fpkg failed, reason: self-signed certificate in certificate chain
npm error A complete log of this run can be found in: /root/.npm/_logs/x.log"""
    assert "NODE_EXTRA_CA_CERTS" in provision.cause(npm) and "\n" not in provision.cause(npm)
    offline = "npm error code EAI_AGAIN\nnpm error request to https://registry.example failed, reason: getaddrinfo EAI_AGAIN"
    assert provision.cause(offline) == ("npm error code EAI_AGAIN; npm error request to https://registry.example failed, "
                                        "reason: getaddrinfo EAI_AGAIN")
    assert provision.cause("Collecting x\nERROR: No matching distribution found for x==9") == \
        "ERROR: No matching distribution found for x==9"
    assert provision.cause("") == "it printed nothing"


def test_a_transient_failure_is_retried_and_a_lasting_one_fails_with_its_cause(tmp_path, monkeypatch):
    monkeypatch.setattr("time.sleep", lambda _: None)
    tries = tmp_path / "tries"
    flaky = f"echo x >> {tries}; [ $(wc -l < {tries}) -ge 2 ] || {{ echo 'npm error code ECONNRESET' >&2; exit 1; }}"
    said = []
    provision.run_step(["sh", "-c", flaky], said.append)
    assert tries.read_text().count("x") == 2 and any("retrying" in s for s in said)
    with pytest.raises(provision.StepFailed, match=r"^sh failed \(exit 3\): ERROR: bad pin$"):
        provision.run_step(["sh", "-c", f"echo y >> {tmp_path / 'once'}; echo 'ERROR: bad pin'; exit 3"], said.append)
    assert (tmp_path / "once").read_text().count("y") == 1  # not transient: tried once


def test_one_failing_part_is_said_in_a_line_and_the_others_still_install(tmp_path, monkeypatch):
    """A fresh machine's `npm ci` failed (a proxy's certificate) and setup stopped there with a traceback: the
    SWE projects were never fetched. Now npm's failure is one line and the next part installs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_npm = bin_dir / "npm"
    fake_npm.write_text("#!/bin/sh\necho 'npm error code SELF_SIGNED_CERT_IN_CHAIN' >&2\nexit 1\n")
    fake_npm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("LWM_DATA_DIR", str(tmp_path / "data"))
    installed = []
    real_install = provision.Part.install

    def install(self, say):
        if self.name == "npm-servers":
            return real_install(self, say)
        installed.append(self.name)

    monkeypatch.setattr(provision.Part, "install", install)
    result = runner.invoke(app, ["setup", "mcp", "swe", "--no-system"])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if "failed" in line]
    assert lines and "NODE_EXTRA_CA_CERTS" in " ".join(lines) and "Traceback" not in result.output
    assert installed == ["pypi-servers", "swe-projects"]  # the parts after npm's still ran
    assert not (tmp_path / "data" / "mcp.tmp").exists()  # and npm's staging folder was removed


def test_documents_unpacked_into_the_data_folder_stand_in_for_their_package(tmp_path, monkeypatch):
    """A doc package whose install would upgrade the system (python3-doc pins a newer python3.11) is unpacked
    into the data folder instead: the corpora find its pages there, and setup counts the package as present."""
    from lwm.envs.real.docsets import DOC_SETS

    monkeypatch.setenv("LWM_DATA_DIR", str(tmp_path))
    docs = DOC_SETS["bash-manual"]
    assert docs.root == docs.installed  # nothing unpacked: Debian's place
    copy = tmp_path / "debian" / "usr/share/doc/bash"
    copy.mkdir(parents=True)
    (copy / "bashref.html").write_text("<title>Bash Reference Manual</title>")
    assert docs.root == copy and provision.located(Path("/usr/share/doc/nosuch")) == Path("/usr/share/doc/nosuch")
    missing = provision.missing_system(["search"])
    (tmp_path / "debian" / ".packages").mkdir()
    (tmp_path / "debian" / ".packages" / "bash-doc").write_text("unpacked")
    assert "bash-doc" not in provision.missing_system(["search"])
    assert set(provision.missing_system(["search"])) == set(missing) - {"bash-doc"}
    assert provision.is_documentation("python3.11-doc") and not provision.is_documentation("bash")


@pytest.mark.skipif(shutil.which("apt-cache") is None, reason="no apt here")
def test_a_held_doc_package_brings_the_doc_packages_holding_its_pages():
    """python3-doc is symlinks into python3.11-doc: unpacking it alone would give no page."""
    if "python3-doc" not in subprocess.run(["apt-cache", "pkgnames", "python3-doc"], capture_output=True,
                                           text=True).stdout:
        pytest.skip("apt's lists are not here (apt-get update)")
    closure = provision._documentation_closure(["python3-doc"])
    assert closure[0] == "python3-doc" and (provision.installed("python3.11-doc") or "python3.11-doc" in closure)
    assert all(provision.is_documentation(p) for p in closure)


def _commands(group, path=()):
    """Every command path of the CLI (typer's click group)."""
    import typer.main

    click_group = typer.main.get_command(group) if not hasattr(group, "commands") else group
    for name, command in click_group.commands.items():
        yield (*path, name)
        if hasattr(command, "commands"):
            yield from _commands(command, (*path, name))


def _wheel_in_a_new_venv(tmp_path: Path, extras: str) -> None:
    """pip wheel of the checkout, installed with ``extras`` into a new venv at ``tmp_path / "venv"`` (llama.cpp,
    where an extra needs it, built as make run builds it)."""
    checkout = Path(__file__).parents[2]
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "wheel"),
                           str(checkout)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (wheel,) = (tmp_path / "wheel").glob("lwm-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True)
    done = subprocess.run([str(tmp_path / "venv/bin/pip"), "install", "-q", f"{wheel}[{extras}]"],
                          capture_output=True, text=True, env={**os.environ, "CMAKE_ARGS": os.environ.get(
                              "CMAKE_ARGS", "-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF")}, timeout=1200)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.slow
def test_a_wheel_installed_outside_the_checkout_runs_every_command_and_collects(tmp_path):
    """pip wheel, a fresh venv, from a folder that is not the checkout: every --help, a simulated step,
    `lwm setup mcp`, and real episodes in the terminal and in MCP's time server."""
    _wheel_in_a_new_venv(tmp_path, "mcp")
    lwm = str(tmp_path / "venv/bin/lwm")
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}

    def run(*args, timeout=300):
        done = subprocess.run([lwm, *args], cwd=away, env=env, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"lwm {' '.join(args)}: {done.stdout[-1500:]}{done.stderr[-1500:]}"
        return done.stdout

    for command in _commands(app):
        assert "Usage" in run(*command, "--help")
    step = json.loads(run("simulate", "--domain", "terminal", "--model", "mock", "--json",
                          "--action", '[{"keystrokes": "ls\\n", "duration": 0.1}]'))
    assert step["observation"]
    run("setup", "mcp", "--no-system")
    for domain, options in (("terminal", []), ("mcp", ["--env-option", "preset=time"])):
        out = away / f"corpus-{domain}"
        run("collect", "--domain", domain, "--episodes", "1", "--max-steps", "3", *options, "--out", str(out))
        (line,) = (out / "trajectories.jsonl").read_text().splitlines()
        assert len(json.loads(line)["turns"]) == 3
    assert not any(p.name == "servers" for p in away.iterdir())


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("tmux") and shutil.which("bwrap")), reason="needs tmux and bubblewrap")
def test_a_wheel_with_only_the_embedded_extra_runs_the_demo_with_the_default_model_and_scores(tmp_path):
    """What `make run` installs (lwm[embedded], nothing else) is enough for the demo: the default model
    (lwm-mini) predicts, and the scores carry both floors (copy-retrieved needs bm25s: a fresh machine once
    ended the demo in a ModuleNotFoundError)."""
    _wheel_in_a_new_venv(tmp_path, "embedded")
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "LWM_MODEL")}
    done = subprocess.run([str(tmp_path / "venv/bin/lwm"), "demo"], cwd=away, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "lwm-mini" in done.stdout and (away / "lwm-demo" / "report.html").is_file()
    scores = json.loads((away / "lwm-demo" / "scores.json").read_text())
    assert scores["overall"] > 0 and scores["skill_over_copy_retrieved"]["domains"], scores.keys()


def test_sdists_come_from_pips_index_in_either_simple_form(monkeypatch):
    """A machine behind a company index downloads where its pip does (PIP_INDEX_URL or pip.conf), and such an
    index may answer the simple API's HTML form (PEP 503) rather than its JSON (PEP 691)."""
    from types import SimpleNamespace

    from lwm.provision import sdists

    monkeypatch.setenv("PIP_INDEX_URL", "https://pypi.example.internal/simple/")
    assert sdists.pip_index() == "https://pypi.example.internal/simple"
    digest = "ab" * 32
    page = SimpleNamespace(url="https://pypi.example.internal/simple/six/", headers={"content-type": "text/html"},
                           text=f'<a href="../../files/six-1.17.0.tar.gz#sha256={digest}">six-1.17.0.tar.gz</a>')
    assert sdists._listed_files(page) == [("https://pypi.example.internal/files/six-1.17.0.tar.gz", digest)]
    as_json = SimpleNamespace(url="https://pypi.org/simple/six/", headers={"content-type": "application/vnd.pypi."
                                                                          "simple.v1+json"},
                              json=lambda: {"files": [{"url": "https://files.example/six.tar.gz",
                                                       "hashes": {"sha256": digest}}]})
    assert sdists._listed_files(as_json) == [("https://files.example/six.tar.gz", digest)]
