"""Print the desktop's accessibility tree, one node per line. Run with Debian's python3 (pyatspi).

Used by the OS environment as a subprocess: pyatspi comes from the system package python3-pyatspi,
which lwm's own interpreter may not be able to import.
"""

import sys

import pyatspi

STATES = [(pyatspi.STATE_FOCUSED, "focused"), (pyatspi.STATE_ACTIVE, "active"), (pyatspi.STATE_EDITABLE, "editable"),
          (pyatspi.STATE_CHECKED, "checked"), (pyatspi.STATE_SELECTED, "selected"),
          (pyatspi.STATE_EXPANDED, "expanded")]
LIMIT = int(sys.argv[1]) if len(sys.argv) > 1 else 3000


def walk(node, depth, out):
    if len(out) >= LIMIT:
        return
    states = node.getState()
    if depth > 1 and not states.contains(pyatspi.STATE_SHOWING):
        return
    line = "  " * depth + f"{node.getRoleName()} {node.name or ''!r}"
    try:
        text = node.queryText().getText(0, -1)
        if text and text != node.name:
            line += f" text={text[:300]!r}"
    except NotImplementedError:
        pass
    try:
        x, y, w, h = node.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
        if w > 0 and h > 0:
            line += f" ({x}, {y}, {w}, {h})"
    except NotImplementedError:
        pass
    flags = [label for state, label in STATES if label and states.contains(state)]
    if not states.contains(pyatspi.STATE_SENSITIVE) and depth:
        flags.append("disabled")
    out.append(line + ("" if not flags else " " + " ".join(flags)))
    for child in node:
        if child is not None:
            walk(child, depth + 1, out)


def main():
    out = []
    for app in pyatspi.Registry.getDesktop(0):
        if app is not None and app.childCount:  # a windowless service (a D-Bus-started portal) is not on screen
            try:
                walk(app, 0, out)
            except Exception as exc:  # an application that went away mid-walk
                out.append(f"(unreadable application: {exc})")
    print("\n".join(out))


main()
