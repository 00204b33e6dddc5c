"""What the real environments need beyond lwm's Python packages, provisioned by ``lwm setup`` into lwm's data
folder (platformdirs' user data folder; ``LWM_DATA_DIR`` overrides), so a wheel installed anywhere and a git
checkout find them in one place.

The pins are package data beside this file: the npm MCP servers (``mcp/package.json`` + lock), the PyPI MCP
servers that need an older mcp SDK than lwm's (``pypi/requirements.txt``, their own venv), and the SWE
projects' source distributions (``swe/projects.txt``). System packages are checked (``dpkg -s``) and, as root,
installed with apt — only the missing ones, never upgrading what is there.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lwm.provision.sdists import PINS, fetch_sdist, pinned_hashes, verified
from lwm.provision.steps import DEADLINE, StepFailed, cause, run_step

__all__ = ["DEADLINE", "PINS", "StepFailed", "cause", "fetch_sdist", "pinned_hashes", "run_step"]
def data_dir() -> Path:
    """lwm's data folder: ``LWM_DATA_DIR``, or the platform's user data folder for lwm."""
    if os.environ.get("LWM_DATA_DIR"):
        return Path(os.environ["LWM_DATA_DIR"]).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("lwm"))


def npm_bin() -> Path:
    return data_dir() / "mcp" / "node_modules" / ".bin"


def pypi_bin() -> Path:
    return data_dir() / "pypi" / ".venv" / "bin"


def swe_projects() -> list[str]:
    """The pinned SWE projects (``name==version``)."""
    return list(pinned_hashes(PINS / "swe" / "projects.txt"))


def swe_sdists() -> list[Path]:
    return [data_dir() / "swe" / "sdists" / f"{p.replace('==', '-')}.tar.gz" for p in swe_projects()]


def sdist_problem(path: Path) -> str | None:
    """What is wrong with ``path`` if it is one of the pinned SWE sdists (missing, or not the pinned bytes), else
    None: checked where a sdist is used, not only when it was fetched."""
    for pin, file in zip(swe_projects(), swe_sdists(), strict=True):
        if file.resolve() == Path(path).resolve():
            if not file.is_file():
                return f"{file.name} is missing"
            if not verified(file, pin):
                return f"{file.name} is not the pinned file (its sha256 is not {pin}'s in projects.txt)"
            return None
    return None


class NotProvisioned(RuntimeError):
    """Something an environment needs is not installed; the message names the ``lwm setup`` that installs it."""


def require(path: Path, what: str, env: str) -> Path:
    if not path.exists():
        raise NotProvisioned(f"{what} is not installed ({path} is missing): run `lwm setup {env}`")
    return path


# --- system packages ---------------------------------------------------------------------------------------
SANDBOX = ["bubblewrap", "libseccomp2"]
SYSTEM: dict[str, list[str]] = {
    "terminal": [*SANDBOX, "tmux", "sqlite3", "jq", "bc", "dc", "units", "lua5.4", "ruby"],
    "swe": [*SANDBOX, "git"],
    "mcp": [*SANDBOX, "nodejs", "npm", "python3-venv", "git"],
    "web": [*SANDBOX, "chromium"],
    "os": [*SANDBOX, "python3-tk", "xvfb", "xauth", "dbus-x11", "at-spi2-core", "python3-pyatspi", "mousepad",
           "galculator", "xdotool", "gtk-3-examples", "gucharmap", "gnumeric", "abiword"],
    "search": ["python3-doc", "manpages", "manpages-dev", "dict-foldoc", "dict-jargon", "git-doc", "sqlite3-doc",
               "bash-doc", "debian-reference-en", "python-flask-doc", "python-jinja2-doc", "python-click-doc",
               "python-werkzeug-doc", "python-requests-doc", "python-attr-doc", "python-pytest-doc",
               "python-pygments-doc", "python-markdown-doc", "apache2-doc", "sphinx-doc", "cmake-doc",
               "python-babel-doc", "python-setuptools-doc", "python-itsdangerous-doc", "python-webob-doc",
               "python-tornado-doc", "python-cryptography-doc", "python-scrapy-doc", "python-django-doc",
               "python-sqlalchemy-doc", "python-lxml-doc", "vim-doc", "zsh-doc"],
}
"""Debian packages each environment needs (the web environment's sites and the search environment's documents
are Debian's doc packages). Never Debian's nodejs-doc: it conflicts with NodeSource's nodejs."""
ENVS = tuple(SYSTEM)


def installed(package: str) -> bool:
    done = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
    return done.returncode == 0 and done.stdout.strip().endswith(" installed")


def node_present() -> bool:
    """NodeSource's nodejs ships npm inside it: a node and npm on PATH satisfy both packages."""
    return shutil.which("node") is not None and shutil.which("npm") is not None


def missing_system(envs: Sequence[str]) -> list[str]:
    wanted = dict.fromkeys(p for env in envs for p in SYSTEM[env])
    if node_present():
        wanted.pop("nodejs", None), wanted.pop("npm", None)
    return [p for p in wanted if not installed(p) and not unpacked(p)]


# --- documentation packages unpacked into the data folder ------------------------------------------------------
def debian_root() -> Path:
    """Where doc packages that are not installed are unpacked (``dpkg-deb -x``): a tree mirroring ``/``."""
    return data_dir() / "debian"


def located(path: Path) -> Path:
    """A file or folder a Debian package puts at ``path``, or its copy unpacked into lwm's data folder: documents
    a corpus needs are there even where installing their package would upgrade the system (python3-doc pins a
    newer python3.11 than Debian 12's first release)."""
    copy = debian_root() / path.relative_to(path.anchor)
    return copy if copy.exists() or copy.is_symlink() else path


def is_documentation(package: str) -> bool:
    """A package of documents only (Debian's ``-doc`` and ``manpages`` packages), which lwm may unpack rather than
    install: nothing in them runs."""
    return package.endswith("-doc") or package in SYSTEM["search"]


def unpacked(package: str) -> bool:
    return (debian_root() / ".packages" / package).is_file()


def _documentation_closure(packages: Sequence[str]) -> list[str]:
    """``packages`` and, recursively, the documentation packages they depend on that are not installed
    (python3-doc's pages are in python3.11-doc): what unpacking them needs, without their programs."""
    chosen = list(dict.fromkeys(packages))
    for package in chosen:  # grows while it is walked
        done = subprocess.run(["apt-cache", "depends", "--no-recommends", "--no-suggests", "--no-enhances",
                               package], capture_output=True, text=True)
        for line in done.stdout.splitlines():
            kind, _, dependency = line.strip().lstrip("|").partition(": ")
            if kind == "Depends" and is_documentation(dependency) and dependency not in chosen \
                    and not installed(dependency):
                chosen.append(dependency)
    return chosen


def unpack_documentation(packages: Sequence[str], say: Callable[[str], None]) -> list[str]:
    """Download documentation packages with apt (checked against the signed archive index, as an install is)
    and unpack them into ``debian_root()`` without installing anything; returns the packages unpacked."""
    import tempfile

    wanted = _documentation_closure(packages)
    root = debian_root()
    (root / ".packages").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=data_dir(), prefix=".debs-") as folder:
        os.chmod(folder, 0o755)  # apt's _apt user downloads into it when it can
        run_step(["apt-get", "download", "-q", *wanted], say, cwd=Path(folder))
        for deb in sorted(Path(folder).glob("*.deb")):
            run_step(["dpkg-deb", "-x", str(deb), str(root)], say, tries=1)
    for package in wanted:
        (root / ".packages" / package).write_text("unpacked by lwm setup; not installed\n")
    return wanted


def apt_line(packages: Sequence[str]) -> list[str]:
    """Install exactly these packages: no recommended extras, and no upgrade of any that is already there."""
    return ["apt-get", "install", "-y", "-qq", "--no-upgrade", "--no-install-recommends", *packages]


def apt_upgrades(packages: Sequence[str]) -> list[str]:
    """Installed packages that installing ``packages`` would upgrade as dependencies (apt's simulation)."""
    done = subprocess.run(["apt-get", "install", "-s", "--no-upgrade", "--no-install-recommends", *packages],
                          capture_output=True, text=True)
    return upgraded_in(done.stdout)


def upgraded_in(simulation: str) -> list[str]:
    """The packages an ``apt-get -s`` run would upgrade: ``Inst NAME [OLD] (NEW ...)``. A new install is
    ``Inst NAME (NEW ... [ARCH])``: its only bracket is the architecture, inside the parentheses."""
    return [words[1] for line in simulation.splitlines()
            if len(words := line.split()) > 2 and words[0] == "Inst" and words[2].startswith("[")]


def split_upgrades(packages: Sequence[str]) -> tuple[list[str], dict[str, list[str]]]:
    """``packages`` that install without upgrading anything already there, and for each of the others, what its
    install would upgrade (e.g. bash-doc pulls a newer bash): those are left out unless the user consents."""
    if not packages or not apt_upgrades(packages):
        return list(packages), {}
    held = {p: ups for p in packages if (ups := apt_upgrades([p]))}
    return [p for p in packages if p not in held], held


# --- lwm's own parts -----------------------------------------------------------------------------------------
def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _stamped(folder: Path, pins: Path) -> bool:
    stamp = folder / ".lwm-installed"
    return stamp.is_file() and stamp.read_text().strip() == _digest(pins)


def _stamp(folder: Path, pins: Path) -> None:
    (folder / ".lwm-installed").write_text(_digest(pins) + "\n")


@dataclass(frozen=True)
class Part:
    """One thing ``lwm setup`` provides: where it goes, whether it is there, how to put it there."""

    name: str
    env: str
    describe: str
    subdir: str
    """Its folder under the data folder."""

    def folder(self) -> Path:
        return data_dir() / self.subdir

    def ready(self) -> bool:
        return not self.problems()

    def problems(self) -> list[str]:
        """What is missing or wrong, each named (a tampered sdist by its file name); empty when ready."""
        if self.name == "npm-servers":
            return [] if _stamped(self.folder(), PINS / "mcp" / "package-lock.json") else ["not installed"]
        if self.name == "pypi-servers":
            return [] if _stamped(self.folder() / ".venv", PINS / "pypi" / "requirements.txt") else ["not installed"]
        return [problem for f in swe_sdists() if (problem := sdist_problem(f))]

    def install(self, say: Callable[[str], None]) -> None:
        """Install into a staging folder renamed into place (a killed run leaves no half install); the venv
        where it will live, stamped last (its scripts name their own path); the sdists one file at a time (a
        rerun downloads only the missing ones)."""
        folder = self.folder()
        folder.parent.mkdir(parents=True, exist_ok=True)
        if self.name == "swe-projects":
            sdists = folder / "sdists"
            sdists.mkdir(parents=True, exist_ok=True)
            for pin, file in zip(swe_projects(), swe_sdists(), strict=True):
                if not verified(file, pin):
                    fetch_sdist(pin, sdists, say)
        elif self.name == "pypi-servers":
            shutil.rmtree(folder, ignore_errors=True)
            venv = folder / ".venv"
            run_step([_system_python(), "-m", "venv", str(venv)], say)
            # every file checked against its pinned hash; wheels only, so no package's build code runs
            run_step([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--require-hashes", "--only-binary",
                  ":all:", "--no-deps", "-r", str(PINS / "pypi" / "requirements.txt")], say)
            _stamp(venv, PINS / "pypi" / "requirements.txt")
        else:
            staging = folder.with_name(folder.name + ".tmp")
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            for name in ("package.json", "package-lock.json"):
                shutil.copy(PINS / "mcp" / name, staging / name)
            # npm ci checks every package against the lock's integrity hashes; no install scripts run (none of
            # these servers has one, and they would run as the user lwm setup runs as, often root)
            try:
                run_step(["npm", "ci", "--prefix", str(staging), "--ignore-scripts", "--no-audit", "--no-fund",
                          "--loglevel=error"], say)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)  # nothing half-installed left behind
                raise
            _stamp(staging, PINS / "mcp" / "package-lock.json")
            shutil.rmtree(folder, ignore_errors=True)
            staging.rename(folder)


def _system_python() -> str:
    """A Python to build the servers' own venv with: the one lwm runs on, outside any venv."""
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    return str(base) if base.exists() else sys.executable


PARTS = [
    Part("npm-servers", "mcp", "npm MCP servers (memory, filesystem, everything, sequential-thinking, code-runner)",
         "mcp"),
    Part("pypi-servers", "mcp", "PyPI MCP servers in their own venv (sqlite, calculator, duckdb, shell)", "pypi"),
    Part("swe-projects", "swe", f"SWE projects' source distributions ({len(swe_projects())} pinned)", "swe"),
]
