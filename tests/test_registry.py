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
