import pytest

from lwm.domains import get_domain
from lwm.domains.base import Domain
from lwm.registry import names, register


def test_a_plugin_domain_registers_with_the_decorator():
    @register("domain", "spreadsheet")
    class Spreadsheet(Domain):
        name = "spreadsheet"
        title = "Spreadsheet"
        example_action = {"cell": "A1"}

    try:
        assert "spreadsheet" in names("domain")
        assert get_domain("spreadsheet").render_action(get_domain("spreadsheet").action({"cell": "A1"}), 1) \
            .startswith("### Turn 1")
    finally:
        from lwm import registry

        registry._parts["domain"].pop("spreadsheet")


def test_a_part_is_registered_under_its_own_name_once_and_a_nameless_one_is_refused():
    from lwm import registry

    @register("domain")
    class Ledger(Domain):
        name = "ledger"
        title = "Ledger Book"
        example_action = {"post": 1}

    try:
        assert registry.get("domain", "ledger") is Ledger and Ledger.gym_name() == "LedgerBook"
    finally:
        registry._parts["domain"].pop("ledger")
    with pytest.raises(TypeError, match="needs a name"):
        register("backend")(object())


def test_a_lookup_loads_only_its_own_kind_and_says_what_is_known():
    import subprocess
    import sys

    script = ("import sys; from lwm.registry import get; get('domain', 'terminal'); "
              "print('lwm.bench.scorer' in sys.modules, 'lwm.collect.explorers' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]
    with pytest.raises(KeyError, match="unknown domain 'nope'; known: android, mcp"):
        get_domain("nope")


def test_threads_looking_up_a_kind_for_the_first_time_all_find_its_parts():
    """A served session's first look-up happens in many threads at once (the verifiers face runs rollouts
    concurrently): none may see a kind as loaded while another thread is still importing its modules."""
    import subprocess
    import sys

    code = """
import threading
from lwm import registry
found, barrier = [], threading.Barrier(8)
def look():
    barrier.wait()
    found.append(registry.get("env", "terminal").__name__)
threads = [threading.Thread(target=look) for _ in range(8)]
[t.start() for t in threads]; [t.join() for t in threads]
print(len(found))
"""  # a fresh process: in this one the kinds are loaded already
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "8"
