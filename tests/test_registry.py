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
