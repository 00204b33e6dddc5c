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
import html
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

PINS = Path(__file__).parent


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


@cache
def pinned_hashes(path: Path) -> dict[str, list[str]]:
    """``name==version`` -> its allowed sha256 digests, from a pip requirements file with ``--hash`` options
    (``scripts/pin_hashes.py`` writes them)."""
    pins: dict[str, list[str]] = {}
    current = None
    for token in path.read_text().replace("\\\n", " ").split():
        if token.startswith("#"):
            current = None
        elif "==" in token and not token.startswith("--"):
            current = token
            pins[current] = []
        elif token.startswith("--hash=sha256:") and current:
            pins[current].append(token.removeprefix("--hash=sha256:"))
    return pins


def swe_projects() -> list[str]:
    """The pinned SWE projects (``name==version``)."""
    return list(pinned_hashes(PINS / "swe" / "projects.txt"))


def swe_sdists() -> list[Path]:
    return [data_dir() / "swe" / "sdists" / f"{p.replace('==', '-')}.tar.gz" for p in swe_projects()]


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


DEADLINE = 900.0
"""The most seconds one install step (npm ci, pip, one download) may take before it is stopped."""


TRANSIENT = ("ECONNRESET", "ETIMEDOUT", "EAI_AGAIN", "ECONNREFUSED", "ENOTFOUND", "socket hang up", "network",
             "Temporary failure", "Connection reset", "timed out", "503", "502", "429")
"""Words in a failed step's output that say a retry may help (a registry's bad minute, not a bad pin)."""
CERTIFICATE = ("SELF_SIGNED_CERT", "UNABLE_TO_GET_ISSUER_CERT", "UNABLE_TO_VERIFY_LEAF_SIGNATURE", "CERTIFICATE_VERIFY",
               "certificate verify failed", "CERT_")


class StepFailed(RuntimeError):
    """One install step failed; the message is its cause in one line (and what to do about it)."""


def cause(output: str) -> str:
    """The one line of a failed step's output that says why: npm's ``npm error code``/``npm ERR!`` line, pip's
    ``ERROR:`` line, else the last non-empty line; a certificate error names the settings that fix it."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if any(word in output for word in CERTIFICATE):
        return ("the registry's TLS certificate is not trusted here (a proxy's own certificate?): give its CA "
                "bundle as NODE_EXTRA_CA_CERTS (npm) and SSL_CERT_FILE / PIP_CERT (pip, downloads), then rerun")
    for marker in ("npm error code", "npm ERR! code", "ERROR:", "E:", "error:"):
        hits = [line for line in lines if line.startswith(marker)]
        if hits:
            detail = next((line for line in lines if line.startswith(("npm error", "npm ERR!"))
                           and line not in hits), "") if "npm" in marker else ""
            return "; ".join(filter(None, [hits[0], detail]))[:400]
    return (lines[-1] if lines else "it printed nothing")[:400]


def run_step(argv: list[str], say: Callable[[str], None], deadline: float = DEADLINE,
             env: dict[str, str] | None = None, cwd: Path | None = None, tries: int = 3) -> None:
    """Run one install step in its own process group, stopped (the whole group) at ``deadline`` seconds, on
    Ctrl+C, and — by a watchdog — if lwm itself is killed: an offline `npm ci` once hung and was orphaned.
    A failure whose output looks transient (a reset connection, a 503) is retried with back-off, ``tries`` in
    all; any failure is a ``StepFailed`` that says its cause in one line."""
    import time

    for attempt in range(1, tries + 1):
        say(" ".join(argv) + (f" (try {attempt} of {tries})" if attempt > 1 else ""))
        code, output = _run_once(argv, deadline, env, cwd)
        if code == 0:
            return
        why = cause(output)
        if attempt == tries or not any(word in output for word in TRANSIENT) or why.startswith("the registry's TLS"):
            raise StepFailed(f"{Path(argv[0]).name} failed (exit {code}): {why}")
        say(f"{Path(argv[0]).name} failed ({why}); retrying in {2 ** attempt} s")
        time.sleep(2 ** attempt)


def _run_once(argv: list[str], deadline: float, env: dict[str, str] | None, cwd: Path | None) -> tuple[int, str]:
    from lwm.envs.real.process import Reaper, kill_group

    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                                start_new_session=True, env=env, cwd=cwd)
    except OSError as exc:
        raise StepFailed(f"{argv[0]} could not run: {exc.strerror or exc}") from None
    reaper = Reaper(commands=[f"kill -9 -- -{proc.pid}"])
    try:
        out, _ = proc.communicate(timeout=deadline)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise StepFailed(f"{argv[0]} took longer than {deadline:g} s and was stopped (offline? a registry "
                         "that does not answer?)") from None
    except BaseException:
        kill_group(proc)
        raise
    finally:
        reaper.proc.kill()  # the step is over either way: the watchdog's kill is not needed
        reaper.proc.wait()
    return proc.returncode, out or ""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _verified(path: Path, pin: str) -> bool:
    """Whether ``path`` holds the pinned file: present and its sha256 one of the pin's."""
    return path.is_file() and _sha256(path) in pinned_hashes(PINS / "swe" / "projects.txt").get(pin, [])


INDEX = "https://pypi.org/simple"


def pip_index() -> str:
    """The package index pip is configured with here (``PIP_INDEX_URL``, else pip's config files), else PyPI's:
    a machine behind a company index downloads the sdists from where its pip does."""
    if os.environ.get("PIP_INDEX_URL"):
        return os.environ["PIP_INDEX_URL"].rstrip("/")
    try:
        done = subprocess.run([sys.executable, "-m", "pip", "config", "get", "global.index-url"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return INDEX
    return done.stdout.strip().rstrip("/") if done.returncode == 0 and done.stdout.strip() else INDEX


def _listed_files(answer: Any) -> list[tuple[str, str]]:
    """``(url, sha256)`` of each file a simple-index page lists, in its JSON form (PEP 691) or its HTML form
    (PEP 503: the hash in the link's fragment)."""
    from urllib.parse import urljoin

    base = str(answer.url)
    if "json" in answer.headers.get("content-type", ""):
        return [(urljoin(base, f["url"]), f["hashes"].get("sha256", "")) for f in answer.json()["files"]]
    links = re.findall(r'href="([^"#]+)#sha256=([0-9a-f]{64})"', answer.text)
    return [(urljoin(base, html.unescape(url)), digest) for url, digest in links]


def fetch_sdist(pin: str, into: Path, say: Callable[[str], None], index: str | None = None) -> Path:
    """The pinned source distribution of ``pin``, downloaded as a file (no build code runs, as it would under
    `pip download`), kept only if its sha256 is the pinned one. A network failure is retried with back-off."""
    import httpx2 as httpx
    from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

    name, version = pin.split("==")
    index = index or pip_index()
    wanted = set(pinned_hashes(PINS / "swe" / "projects.txt").get(pin, []))
    if not wanted:
        raise StepFailed(f"{pin} has no pinned hash in projects.txt (scripts/pin_hashes.py writes them)")
    target = into / f"{name}-{version}.tar.gz"
    staging = target.with_name(target.name + ".part")

    @retry(retry=retry_if_exception_type(httpx.TransportError), stop=stop_after_attempt(3),
           wait=wait_exponential(min=2, max=16), reraise=True)
    def download() -> str:
        with httpx.Client(timeout=60, follow_redirects=True) as client:
            listing = client.get(f"{index}/{name}/", headers={
                "Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"})
            listing.raise_for_status()
            found = next((url for url, digest in _listed_files(listing) if digest in wanted), None)
            if found is None:
                raise StepFailed(f"{index} lists no file of {pin} with the pinned sha256")
            say(f"download {found}")
            digest = hashlib.sha256()
            with client.stream("GET", found) as answer, staging.open("wb") as handle:
                answer.raise_for_status()
                for block in answer.iter_bytes():
                    digest.update(block)
                    handle.write(block)
        return digest.hexdigest()

    try:
        got = download()
    except httpx.HTTPStatusError as exc:
        raise StepFailed(f"{pin}: {exc.request.url} answered {exc.response.status_code}") from None
    except httpx.TransportError as exc:
        text = str(exc) or type(exc).__name__
        if any(word in text for word in CERTIFICATE):
            text = cause(text)
        raise StepFailed(f"{pin}: could not download from {index} ({text}); offline? (pip's index is used: "
                         "PIP_INDEX_URL or pip.conf)") from None

    if got not in wanted:
        staging.unlink(missing_ok=True)
        raise StepFailed(f"{pin}: the downloaded file's sha256 {got} is not the pinned one; nothing kept")
    staging.replace(target)
    return target


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
        if self.name == "npm-servers":
            return _stamped(self.folder(), PINS / "mcp" / "package-lock.json")
        if self.name == "pypi-servers":
            return _stamped(self.folder() / ".venv", PINS / "pypi" / "requirements.txt")
        return all(_verified(f, p) for p, f in zip(swe_projects(), swe_sdists(), strict=True))

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
                if not _verified(file, pin):
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
