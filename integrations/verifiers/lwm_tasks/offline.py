"""Fetch, ahead of any run, the wheels of the script verifiers' chat harness runs (`python -m lwm_tasks.offline`).

verifiers prepares its harness's program, a PEP 723 script, with `uv sync --script` at the start of every run,
which resolves the script's dependencies against PyPI: with no network every rollout ended in a `HarnessError`
with reward 0 (and `vf-eval` still exited 0). `scripts/setup_verifiers.sh` runs this once, while the registries
are reachable: the script's own dependency list (read from verifiers at that time, not copied here) is
downloaded as wheels into `<venv>/lwm-script-wheels` with a simple index of them (`simple/`, PEP 503), and
`lwm_tasks` then gives uv that index as its only one (`UV_DEFAULT_INDEX`; this uv has no `UV_NO_INDEX`).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

WHEELS = Path(sys.prefix) / "lwm-script-wheels"
_BLOCK = re.compile(r"^# /// script$\s(?P<body>(^#(| .*)$\s)+)^# ///$", re.MULTILINE)


def script_dependencies(source: str) -> list[str]:
    """The ``dependencies`` of a PEP 723 script's metadata block."""
    found = _BLOCK.search(source)
    if found is None:
        raise ValueError("the chat program has no PEP 723 script block")
    body = "".join(line[2:] if line.startswith("# ") else line[1:] for line in found["body"].splitlines(True))
    return list(tomllib.loads(body).get("dependencies", []))


def write_simple_index(folder: Path) -> None:
    """``folder/simple/<project>/index.html`` linking each wheel in ``folder``: a local index uv reads as PyPI's."""
    projects: dict[str, list[str]] = {}
    for wheel in sorted(folder.glob("*.whl")):
        projects.setdefault(re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower(), []).append(wheel.name)
    for project, files in projects.items():
        page = folder / "simple" / project
        page.mkdir(parents=True, exist_ok=True)
        links = "".join(f'<a href="../../{name}">{name}</a>\n' for name in files)
        (page / "index.html").write_text(f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n")


def main() -> int:
    from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE

    needed = script_dependencies(CHAT_PROGRAM_SOURCE)
    staging = WHEELS.with_name(WHEELS.name + ".tmp")
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary", ":all:", "--dest", str(staging),
                    *needed], check=True)
    write_simple_index(staging)
    if WHEELS.exists():
        import shutil

        shutil.rmtree(WHEELS)
    staging.rename(WHEELS)
    print(f"setup: {len(list(WHEELS.glob('*.whl')))} wheels for verifiers' chat program ({', '.join(needed)}) "
          f"in {WHEELS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
