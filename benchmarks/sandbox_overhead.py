"""What the hardened sandbox costs per sandboxed command, side by side with the bare bubblewrap call
lwm used before (read-only root, private /tmp, namespaces, nothing else), in one run.

Each round runs ``true`` (and ``python3 -c pass``) once each way, alternating, so machine noise hits both
alike; prints medians, totals and the hardened / bare ratio.
Usage: python benchmarks/sandbox_overhead.py [--rounds 40]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from lwm.envs.real.sandbox import Sandbox, bwrap_path


def bare(workdir: Path, *command: str) -> list[str]:
    """The sandbox as it was before the hardening (for comparison only)."""
    return [bwrap_path(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--bind", str(workdir), str(workdir), "--chdir", str(workdir), "--unshare-net", "--unshare-pid",
            "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--clearenv", "--", *command]


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="lwm-bench-sandbox-"))
    sandbox = Sandbox(workdir)
    table = Table(title=f"per sandboxed command ({args.rounds} rounds, alternating)")
    for col in ("command", "bare median (ms)", "hardened median (ms)", "bare total (s)", "hardened total (s)",
                "hardened / bare (total)"):
        table.add_column(col, justify="left" if col == "command" else "right")
    for command in (["true"], ["python3", "-c", "pass"]):
        timed(bare(workdir, *command)), timed(sandbox.argv(*command))  # warm caches both ways
        before, after = [], []
        for _ in range(args.rounds):
            before.append(timed(bare(workdir, *command)))
            after.append(timed(sandbox.argv(*command)))
        table.add_row(" ".join(command), f"{statistics.median(before) * 1000:.1f}",
                      f"{statistics.median(after) * 1000:.1f}", f"{sum(before):.2f}", f"{sum(after):.2f}",
                      f"{sum(after) / sum(before):.2f}x")
    sandbox.close()
    shutil.rmtree(workdir, ignore_errors=True)
    Console().print(table)


if __name__ == "__main__":
    main()
