"""Training at the oldest versions lwm declares: the floors (``>=``) of the Hugging Face stack in pyproject's
``transformers`` and ``train`` extras are installed over the venv (``pip --target``, no dependency resolution:
a fresh venv's resolve took over 20 minutes here) and lwm's SFT, agent eval and agent GRPO run on them
(``benchmarks/gpu_check.py --cpu``), then the training tests.

    python scripts/check_floors.py            # make floors; CI runs it after the test suite
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
STACK = {"transformers", "huggingface-hub", "trl", "peft", "datasets", "gguf"}
"""The packages whose floors are checked (torch is pinned exactly, so its floor is what the venv has)."""
TESTS = ["tests/train/test_base_model.py", "tests/train/test_sft.py", "tests/train/test_common.py",
         "tests/train/test_device.py", "tests/agent/test_train.py"]


def floors() -> dict[str, str]:
    """Package -> the version its ``>=`` names in the transformers and train extras."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    found = {}
    for line in extras["transformers"] + extras["train"]:
        req = Requirement(line)
        lows = [s.version for s in req.specifier if s.operator == ">="]
        if req.name in STACK and lows:
            found[req.name] = lows[0]
    missing = STACK - set(found)
    if missing:
        raise SystemExit(f"pyproject.toml declares no floor for {sorted(missing)}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", type=Path, default=ROOT / "build" / "floors")
    args = parser.parse_args()
    pins = floors()
    print("floors:", ", ".join(f"{k}=={v}" for k, v in sorted(pins.items())), flush=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--upgrade", "--target",
                    str(args.target), *(f"{k}=={v}" for k, v in sorted(pins.items()))], check=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(args.target), os.environ.get("PYTHONPATH", "")])}
    probe = "; ".join(["import importlib.metadata as m, sys", "from packaging.version import Version as V",
                       f"pins = {pins!r}", "got = {k: m.version(k) for k in pins}", "print('imported:', got)",
                       "sys.exit(any(V(got[k]) != V(v) for k, v in pins.items()))"])
    steps = {"the floors are what Python imports": [sys.executable, "-c", probe],
             "benchmarks/gpu_check.py --cpu": [sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--cpu"],
             "the training tests": [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS]}
    for name, step in steps.items():
        if subprocess.run(step, cwd=ROOT, env=env).returncode != 0:
            print(f"floors: failed: {name}", file=sys.stderr)
            return 1
    print("floors: training, agent eval and agent GRPO pass at the declared floors")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
