"""An Android adapter over adb (adbutils), for users with a device or an emulator.

The observation is the screen's UI hierarchy (``uiautomator dump``), simplified to one node per line
and indented by depth; actions are the android domain's JSON (tap, swipe, type, back, home,
launch_app, long_press, wait), sent as ``adb shell input`` / ``monkey`` commands.

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


def encode_action(content: dict[str, Any]) -> list[str]:
    """The adb shell commands that perform one android action."""
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
        for command in encode_action(action.content):
            self.device.shell(command)
        time.sleep(float(action.content.get("seconds", self.settle)) if action.content["action"] == "wait"
                   else self.settle)
        return Observation(content=self.screen())
