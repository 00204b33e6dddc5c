"""What lwm's real episodes may leave behind, for tests that check nothing was: one definition for all of them."""

from pathlib import Path

from lwm.envs.real.sandbox import UID_RANGE


def leftovers() -> set[str]:
    """lwm's folders, images and mounts in /tmp, and the processes of sandbox uids (as root: a uid of their own)."""
    mounts = {line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if " /tmp/lwm-" in line}
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and UID_RANGE[0] <= entry.stat().st_uid < UID_RANGE[1]:
                mounts.add(f"process {entry.name} {(entry / 'cmdline').read_bytes()[:60]!r}")
        except OSError:
            pass
    # (lwm-sandbox-* is the test process's own folder for its sandboxes, removed when it ends)
    return {p.name for p in Path("/tmp").iterdir() if p.name.startswith(("lwm-", ".lwm-"))
            and not p.name.startswith("lwm-sandbox-")} | mounts
