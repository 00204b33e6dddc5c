"""One install step of ``lwm setup``: a command run in its own process group, with a deadline, a retry where its
failure looks transient, and its cause said in one line."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

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
        reaper.stop()  # the step is over either way: the watchdog's kill is not needed
    return proc.returncode, out or ""
