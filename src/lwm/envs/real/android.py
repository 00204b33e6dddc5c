"""An Android adapter over adb (adbutils), for users with a device or an emulator.

The observation is the screen's UI hierarchy (``uiautomator dump``), simplified to one node per line
and indented by depth; actions are the android domain's JSON (tap, swipe, type, back, home, enter,
launch_app, long_press, wait, or AndroidWorld's action_type forms), sent as ``adb shell input`` / ``monkey``
commands; an action the device cannot perform is answered with an error and the screen.

Untested against a live device: lwm's machines have no Android system image. The parsing of
hierarchies and the encoding of actions are tested on recorded files; without a device, reset()
says so plainly.
"""

from __future__ import annotations

import re
import shlex
import time
import xml.etree.ElementTree as ET
from typing import Any

from lwm.envs.base import TextEnv
from lwm.registry import register
from lwm.types import Action, Context, Observation, Provenance

DUMP = "uiautomator dump /sdcard/window_dump.xml >/dev/null && cat /sdcard/window_dump.xml"
FLAGS = ("clickable", "checkable", "checked", "focused", "scrollable", "selected", "long-clickable")


class NoDeviceError(RuntimeError):
    """No Android device or emulator is reachable through adb."""


def render_hierarchy(xml: str) -> str:
    """A uiautomator dump as indented lines: class, id, text, description, bounds, flags."""
    start = xml.find("<?xml") if "<?xml" in xml else xml.find("<hierarchy")
    if start < 0:
        raise ValueError(f"not a uiautomator hierarchy: {xml[:80]!r}")
    root = ET.fromstring(xml[start:].strip())
    lines: list[str] = []

    def walk(node: ET.Element, depth: int) -> None:
        if node.tag == "node":
            a = node.attrib
            parts = [a.get("class", "node").rsplit(".", 1)[-1]]
            if a.get("resource-id"):
                parts.append(f"id={a['resource-id'].split('/', 1)[-1]}")
            if a.get("text"):
                parts.append(f"text={a['text']!r}")
            if a.get("content-desc"):
                parts.append(f"desc={a['content-desc']!r}")
            parts.append(a.get("bounds", ""))
            parts += [flag for flag in FLAGS if a.get(flag) == "true"]
            lines.append("  " * depth + " ".join(p for p in parts if p))
            depth += 1
        for child in node:
            walk(child, depth)

    walk(root, 0)
    return "\n".join(lines)


SCREEN = (1080, 2400)
"""The screen size assumed for AndroidWorld's direction-only scroll and swipe (a device says its own)."""


def from_android_world(content: dict[str, Any], screen: tuple[int, int] = SCREEN) -> list[dict[str, Any]]:
    """AndroidWorld's JSON action as lwm android actions (several for input_text at a point, double_tap).

    Raises ValueError for what a device cannot do from the action alone (a click by element index, an
    app by display name), which the environment answers as an error."""
    kind, x, y = content.get("action_type"), content.get("x"), content.get("y")
    point = {"x": x, "y": y} if x is not None and y is not None else None
    if kind in ("click", "long_press", "double_tap"):
        if point is None:
            raise ValueError(f"{kind} by element index needs the element's coordinates (x, y)")
        tap = {"action": "long_press" if kind == "long_press" else "tap", **point}
        return [tap, tap] if kind == "double_tap" else [tap]
    if kind == "input_text":
        return ([{"action": "tap", **point}] if point else []) + [{"action": "type", "text": content.get("text", "")}]
    if kind in ("scroll", "swipe"):
        w, h = screen
        # scroll moves the content: scrolling down drags the finger up; swipe moves the finger that way.
        drag = {"down": (0, -1), "up": (0, 1), "right": (-1, 0), "left": (1, 0)}.get(content.get("direction", ""))
        if drag is None:
            raise ValueError(f"{kind} needs a direction: up, down, left or right")
        dx, dy = drag if kind == "scroll" else (-drag[0], -drag[1])
        cx, cy = w // 2, h // 2
        return [{"action": "swipe", "x1": cx, "y1": cy, "x2": cx + dx * w // 3, "y2": cy + dy * h // 3}]
    simple = {"navigate_back": "back", "navigate_home": "home", "keyboard_enter": "enter", "wait": "wait",
              "status": "wait", "answer": "wait"}
    if kind in simple:
        return [{"action": simple[kind], "seconds": 0} if kind in ("status", "answer") else {"action": simple[kind]}]
    if kind == "open_app":
        name = str(content.get("app_name", ""))
        if "." not in name:
            raise ValueError(f"open_app {name!r}: give the app's package name (e.g. com.android.settings)")
        return [{"action": "launch_app", "package": name}]
    raise ValueError(f"unknown AndroidWorld action_type {kind!r}")


def encode_action(content: dict[str, Any]) -> list[str]:
    """The adb shell commands that perform one android action (lwm's form or AndroidWorld's)."""
    if "action_type" in content and "action" not in content:
        return [command for step in from_android_world(content) for command in encode_action(step)]
    kind = content["action"]
    if kind == "tap":
        return [f"input tap {int(content['x'])} {int(content['y'])}"]
    if kind == "long_press":
        x, y = int(content["x"]), int(content["y"])
        return [f"input swipe {x} {y} {x} {y} 800"]
    if kind == "swipe":
        coords = " ".join(str(int(content[k])) for k in ("x1", "y1", "x2", "y2"))
        return [f"input swipe {coords} {int(content.get('duration_ms', 300))}"]
    if kind == "type":
        text = re.sub(r"([\\\"'`$&|;<>()])", r"\\\1", str(content["text"])).replace(" ", "%s")
        return [f"input text {text}"]
    if kind == "back":
        return ["input keyevent KEYCODE_BACK"]
    if kind == "enter":
        return ["input keyevent KEYCODE_ENTER"]
    if kind == "home":
        return ["input keyevent KEYCODE_HOME"]
    if kind == "launch_app":
        return [f"monkey -p {shlex.quote(content['package'])} -c android.intent.category.LAUNCHER 1"]
    if kind == "wait":
        return []
    raise ValueError(f"unknown android action {kind!r}")


@register("env", "android")
class AndroidEnv(TextEnv):
    def __init__(self, context: Context | None = None, *, serial: str | None = None, settle: float = 1.0,
                 adb_host: str = "127.0.0.1", adb_port: int = 5037, render_mode: str | None = None):
        self.serial, self.settle, self.adb = serial, settle, (adb_host, adb_port)
        self.device: Any = None
        super().__init__("android", context, render_mode)

    def provenance(self) -> Provenance:
        return Provenance(source="real", environment="android:adb", extra={"serial": self.serial})

    def _connect(self) -> Any:
        import adbutils

        client = adbutils.AdbClient(host=self.adb[0], port=self.adb[1])
        try:
            devices = client.device_list()
        except Exception as exc:
            raise NoDeviceError(f"cannot reach the adb server at {self.adb[0]}:{self.adb[1]}: {exc}") from exc
        if not devices:
            raise NoDeviceError("no Android device attached: `adb devices` lists none. Start an emulator or "
                                "connect a device with USB debugging on, then try again.")
        if self.serial:
            matches = [d for d in devices if d.serial == self.serial]
            if not matches:
                raise NoDeviceError(f"device {self.serial} not attached; attached: {[d.serial for d in devices]}")
            return matches[0]
        return devices[0]

    def screen(self) -> str:
        return render_hierarchy(self.device.shell(DUMP))

    def initial_observation(self, seed: int | None, options: dict[str, Any]) -> str:
        self.device = self._connect()
        self.serial = self.device.serial
        self.trajectory = self._new_trajectory()
        return self.screen()

    def transition(self, action: Action) -> Observation:
        try:
            commands = encode_action(action.content)
        except (ValueError, KeyError, TypeError) as exc:  # a device cannot perform it: that is its answer
            missing = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
            return Observation(content=f"Error: invalid action: {missing}\n{self.screen()}",
                               metadata={"action_error": True})
        for command in commands:
            self.device.shell(command)
        waiting = action.content.get("action", action.content.get("action_type")) == "wait"
        time.sleep(float(action.content.get("seconds", self.settle)) if waiting else self.settle)
        return Observation(content=self.screen())
