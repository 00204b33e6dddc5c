"""Write the sha256 of every pinned file into lwm setup's pin files, from PyPI's simple index (PEP 691 JSON).

`lwm setup` checks every download against these hashes: the PyPI MCP servers' venv is installed with
`pip --require-hashes --only-binary :all:` (every wheel of each pinned version is listed, so any platform's
wheel verifies and no package's build code runs), and each SWE project's source distribution is fetched as a
file and kept only if its sha256 is the pinned one. Rerun after changing a pin.
Usage: python scripts/pin_hashes.py
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx2 as httpx

PINS = Path(__file__).parents[1] / "src" / "lwm" / "provision"
INDEX = "https://pypi.org/simple"
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s\\]+)")


def files(client: httpx.Client, name: str, version: str) -> list[dict]:
    """The index's files of ``name`` at ``version`` (filename, url, hashes), not yanked."""
    from packaging.utils import parse_sdist_filename, parse_wheel_filename
    from packaging.version import Version

    answer = client.get(f"{INDEX}/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    answer.raise_for_status()
    found = []
    for f in answer.json()["files"]:
        try:
            parsed = (parse_wheel_filename(f["filename"]) if f["filename"].endswith(".whl")
                      else parse_sdist_filename(f["filename"]))
        except ValueError:  # an .egg, an .exe: not something pip installs
            continue
        if parsed[1] == Version(version) and not f.get("yanked"):
            found.append(f)
    return found


def rewrite(path: Path, client: httpx.Client, sdist_only: bool) -> None:
    """Each ``name==version`` line of ``path`` (comments kept) with the hashes of its files."""
    out = []
    for line in path.read_text().splitlines():
        if line.startswith((" ", "\t")) and "--hash" in line:
            continue  # a hash line of an earlier run
        match = PIN.match(line.strip())
        if not match:
            out.append(line)
            continue
        name, version = match.groups()
        chosen = [f for f in files(client, name, version)
                  if not sdist_only or f["filename"].endswith((".tar.gz", ".zip"))]
        if not chosen:
            raise SystemExit(f"{path.name}: no {'source distribution' if sdist_only else 'file'} of "
                             f"{name}=={version} on {INDEX}")
        hashes = sorted({f["hashes"]["sha256"] for f in chosen})
        out.append(f"{name}=={version} \\")
        out += [f"    --hash=sha256:{h}" + (" \\" if i < len(hashes) - 1 else "") for i, h in enumerate(hashes)]
    path.write_text("\n".join(out) + "\n")
    print(f"{path}: {sum(1 for line in out if PIN.match(line))} pins hashed")


def main() -> None:
    with httpx.Client(timeout=60, follow_redirects=True) as client:
        rewrite(PINS / "pypi" / "requirements.txt", client, sdist_only=False)
        rewrite(PINS / "swe" / "projects.txt", client, sdist_only=True)


if __name__ == "__main__":
    main()
