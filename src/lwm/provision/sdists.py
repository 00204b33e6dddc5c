"""The SWE projects' pinned source distributions: fetched as files from pip's index, kept only if their sha256 is
the pinned one (``projects.txt``, written by ``scripts/pin_hashes.py``)."""

from __future__ import annotations

import hashlib
import html
import os
import re
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from lwm.provision.steps import CERTIFICATE, StepFailed, cause

PINS = Path(__file__).parent


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


def verified(path: Path, pin: str) -> bool:
    """Whether ``path`` holds the pinned file: present and its sha256 one of the pin's."""
    if not path.is_file():
        return False
    with path.open("rb") as handle:
        found = hashlib.file_digest(handle, "sha256").hexdigest()
    return found in pinned_hashes(PINS / "swe" / "projects.txt").get(pin, [])


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
