"""The android adapter on recorded hierarchy files (no device here), and its no-device error."""

import socket
from pathlib import Path

import pytest

from lwm.domains import ActionError, get_domain
from lwm.envs.real.android import AndroidEnv, NoDeviceError, encode_action, render_hierarchy

FIXTURE = Path(__file__).parent / "fixtures" / "android_settings.xml"


def test_hierarchy_renders_one_indented_node_per_line():
    lines = render_hierarchy(FIXTURE.read_text()).splitlines()
    assert lines[0] == "FrameLayout [0,0][1080,2400]"
    assert lines[2] == "    TextView id=homepage_title text='Settings' [63,230][1017,390]"
    assert "    Toolbar id=search_action_bar desc='Search settings' [42,446][1038,593] clickable" in lines
    assert lines[5] == "      TextView id=title text='Network & internet' [189,677][723,741] clickable"
    assert lines[-1] == "      Switch id=switch_widget desc='Wi-Fi' [900,990][1020,1060] clickable checkable checked"


def test_dump_noise_before_the_xml_is_ignored_and_garbage_is_refused():
    assert render_hierarchy("UI hierchary dumped to: /sdcard/x.xml\n" + FIXTURE.read_text()).startswith("FrameLayout")
    with pytest.raises(ValueError, match="not a uiautomator hierarchy"):
        render_hierarchy("error: device offline")


@pytest.mark.parametrize(
    "action, commands",
    [
        ({"action": "tap", "x": 540, "y": 700}, ["input tap 540 700"]),
        ({"action": "long_press", "x": 5, "y": 6}, ["input swipe 5 6 5 6 800"]),
        ({"action": "swipe", "x1": 500, "y1": 1800, "x2": 500, "y2": 600}, ["input swipe 500 1800 500 600 300"]),
        ({"action": "type", "text": "wifi & more"}, ["input text wifi%s\\&%smore"]),
        ({"action": "back"}, ["input keyevent KEYCODE_BACK"]),
        ({"action": "home"}, ["input keyevent KEYCODE_HOME"]),
        ({"action": "launch_app", "package": "com.android.settings"},
         ["monkey -p com.android.settings -c android.intent.category.LAUNCHER 1"]),
        ({"action": "wait"}, []),
    ],
)
def test_actions_become_adb_shell_commands(action, commands):
    get_domain("android").action(action)
    assert encode_action(action) == commands


def test_no_adb_server_is_a_clear_error():
    with socket.socket() as s:  # a loopback port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(NoDeviceError, match="cannot reach the adb server"):
        AndroidEnv(adb_port=port).reset()


@pytest.mark.parametrize(
    "action, commands",
    [
        ({"action_type": "click", "x": 540, "y": 700}, ["input tap 540 700"]),
        ({"action_type": "double_tap", "x": 1, "y": 2}, ["input tap 1 2", "input tap 1 2"]),
        ({"action_type": "input_text", "text": "hi", "x": 3, "y": 4}, ["input tap 3 4", "input text hi"]),
        ({"action_type": "scroll", "direction": "down"}, ["input swipe 540 1200 540 400 300"]),
        ({"action_type": "navigate_back"}, ["input keyevent KEYCODE_BACK"]),
        ({"action_type": "keyboard_enter"}, ["input keyevent KEYCODE_ENTER"]),
        ({"action_type": "open_app", "app_name": "com.android.settings"},
         ["monkey -p com.android.settings -c android.intent.category.LAUNCHER 1"]),
        ({"action_type": "status", "goal_status": "complete"}, []),
    ],
)
def test_androidworld_actions_are_accepted_and_become_adb_commands(action, commands):
    assert get_domain("android").action(action).content == action  # kept as the agent sent it
    assert encode_action(action) == commands


def test_what_a_device_cannot_do_is_an_error_not_a_refusal():
    domain = get_domain("android")
    for action in ({"action_type": "click", "index": 3}, {"action_type": "teleport"}, {"action": "fly"}):
        domain.action(action)  # the simulator takes it and predicts the environment's answer
        with pytest.raises(ValueError):
            encode_action(action)  # the real device answers it with an error observation
    with pytest.raises(ActionError, match="JSON objects naming an action"):
        domain.action_from_text('{"x": 1}')
