"""The real web environment: Debian's chromium driven by playwright over local sites, offline."""

import re
import time
from pathlib import Path

import pytest

from lwm.envs.real.docsets import DOC_SETS
from lwm.envs.real.web import CHROMIUM, SITES, START_PAGES, WebEnv, parse_calls
from lwm.provision import located
from tests.envs.real.conftest import wait_for

pytest.importorskip("playwright")
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="chromium not installed (make setup)")


def ref(tree: str, role: str, name: str) -> str:
    match = re.search(rf'{role} "{re.escape(name)}"[^\n]*?\[ref=(\w+)\]', tree)
    assert match, f"no {role} {name!r} in:\n{tree[:2000]}"
    return match.group(1)


@pytest.fixture(scope="module")
def env():
    e = WebEnv()
    yield e
    e.close()


def test_reset_shows_tabs_url_title_and_a_tree_with_refs(env):
    obs, _ = env.reset()
    assert obs.startswith("# Tabs\n[0] Corner Shop (active)\n\nURL: http://shop.lwm.test/index.html\nTitle: Corner Shop")
    assert ref(obs, "link", "Products") and 'heading "Corner Shop" [level=1]' in obs


def test_search_add_to_cart_and_checkout_needs_sign_in(env):
    obs, _ = env.reset(options={"url": "http://shop.lwm.test/products.html"})
    assert "30 products" in obs and "Page 1 of 4" in obs
    obs, *_ = env.step(f"fill('{ref(obs, 'searchbox', 'Search products')}', 'tea')\nkeyboard_press('Enter')")
    assert '1 products matching "tea"' in obs
    obs, *_ = env.step(f"click('{ref(obs, 'button', 'Add Darjeeling tea to cart')}')")
    assert "Added Darjeeling tea to the cart." in obs and 'link "Cart (1)"' in obs
    obs, *_ = env.step("goto('http://shop.lwm.test/cart.html')")
    assert "7.50 EUR" in obs
    obs, *_ = env.step(f"click('{ref(obs, 'button', 'Check out')}')")
    assert "Please sign in before checking out." in obs


def test_form_validation_messages_appear(env):
    obs, _ = env.reset(options={"url": "http://shop.lwm.test/signup.html"})
    obs, *_ = env.step(f"fill('{ref(obs, 'textbox', 'Email')}', 'not-an-email')\n"
                       f"click('{ref(obs, 'button', 'Create account')}')")
    assert "Enter a valid email address." in obs and "You must accept the terms." in obs


def test_wrong_ids_and_offline_sites_are_errors_with_the_page_shown(env):
    env.reset()
    obs, _, _, _, info = env.step("click('e999')")
    assert obs.startswith("Error: no element with bid 'e999' on the page\n\n# Tabs") and info["action_error"]
    obs, *_ = env.step("goto('https://www.example.com/')")
    assert obs.startswith("Error: Page.goto: net::ERR_INTERNET_DISCONNECTED")
    obs, *_ = env.step("goto('http://shop.lwm.test/nothing.html')")
    assert "Title: 404 Not Found" in obs


@pytest.mark.skipif(not (DOC_SETS["python-docs"].root / "library/json.html").exists(), reason="python3-doc missing")
def test_python_docs_are_served_at_their_public_url(env):
    env.reset()
    obs, *_ = env.step("goto('https://docs.python.org/3/library/json.html')")
    assert "URL: https://docs.python.org/3/library/json.html" in obs and "JSON encoder and decoder" in obs


@pytest.mark.skipif(not DOC_SETS["flask-docs"].root.exists(), reason="python-flask-doc missing (setup)")
def test_every_doc_set_starts_on_a_page_it_has_and_is_served_at_its_address(env):
    for name, docset in DOC_SETS.items():
        if docset.root.exists():
            assert (docset.root / docset.start).is_file(), name
            assert START_PAGES[name] == docset.url + docset.start and located(SITES[docset.url]) == docset.root
    env.reset()
    obs, *_ = env.step("goto('https://flask.palletsprojects.com/en/stable/quickstart.html')")
    assert "URL: https://flask.palletsprojects.com/en/stable/quickstart.html" in obs and "Quickstart" in obs


@pytest.mark.skipif(not (DOC_SETS["babel-docs"].root / "changelog.html.gz").exists(), reason="python-babel-doc missing")
def test_a_page_debian_compressed_is_served_as_the_site_serves_it(env):
    assert not (DOC_SETS["babel-docs"].root / "changelog.html").exists()
    env.reset()
    obs, *_ = env.step("goto('https://babel.pocoo.org/en/latest/changelog.html#version-1-0')")
    assert "Title: Babel Changelog" in obs and 'heading "Version 2.10.3"' in obs and "Not Found" not in obs


def test_tabs(env):
    env.reset()
    obs, *_ = env.step("new_tab()\ngoto('http://shop.lwm.test/login.html')")
    assert "[0] Corner Shop\n[1] Sign in - Corner Shop (active)" in obs
    obs, *_ = env.step("tab_focus(0)")
    assert "[0] Corner Shop (active)" in obs
    obs, *_ = env.step("tab_focus(5)")
    assert obs.startswith("Error: no tab 5; 2 open")


def test_parse_calls_reads_arguments():
    assert parse_calls("fill('a1', 'x y')\nscroll(0, -300)\nclick('b2', button='right')") == [
        ("fill", ["a1", "x y"], {}), ("scroll", [0, -300], {}), ("click", ["b2"], {"button": "right"})]


def test_the_browser_runs_sandboxed_without_a_network(env):
    env.reset()
    assert env.sandbox and (env._home / "chromium").read_text().startswith("#!/bin/sh\nexec ")
    assert "--unshare-net" in (env._home / "chromium").read_text()
    home = str(env._home)
    launchers = [p for p in Path("/proc").iterdir() if p.name.isdigit() and home.encode() in _cmdline(p)
                 and _cmdline(p).startswith(b"/usr/bin/bwrap")]
    children = [Path(f"/proc/{c}") for p in launchers for c in (p / "task" / p.name / "children").read_text().split()]
    assert children, "the sandboxed browser process was not found"
    ours = Path("/proc/self/ns/net").readlink()
    assert all((c / "ns" / "net").readlink() != ours for c in children)  # a network namespace of its own


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def test_a_page_that_never_answers_is_given_up_within_the_deadline():
    e = WebEnv(step_timeout=5.0)
    try:
        e.reset()
        started = time.monotonic()
        obs, _, _, _, info = e.step("goto('javascript:for(;;){}')")
        assert time.monotonic() - started < 30
        assert obs.startswith("Error: the page stopped responding") and info["browser_hung"]
        assert "URL: http://shop.lwm.test/index.html" in obs  # restarted at the last page
        obs, *_ = e.step("noop(50)")  # and the episode goes on
        assert "Title: Corner Shop" in obs
    finally:
        e.close()


def test_a_hang_after_a_page_that_cannot_open_again_restarts_at_the_start_and_leaves_no_driver():
    from lwm.envs.real.web import _driver_pids

    others = _driver_pids()  # other tests' browsers in this process (a module's fixture) are not this env's
    e = WebEnv(step_timeout=5.0)
    try:
        e.reset()
        assert len(_driver_pids() - others) == 1
        for url in ("file:///a", "file:///b"):
            e.step(f"goto('{url}')")
        for _ in range(2):
            obs, _, _, _, info = e.step("goto('javascript:for(;;){}')")
            assert obs.startswith("Error: the page stopped responding") and info["browser_hung"]
            assert "the browser was restarted at http://shop.lwm.test/" in obs or "URL: http://shop" in obs
        assert wait_for(lambda: len(_driver_pids() - others) == 1, 10)  # the hung calls' drivers are gone
    finally:
        e.close()
    assert wait_for(lambda: not _driver_pids() - others, 10)
