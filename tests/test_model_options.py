"""ModelOptions (lwm.model_options): the one way a WorldModel is built from a spec and options."""

from lwm.backends import DEFAULT_SPEC
from lwm.model_options import ModelOptions


def test_the_options_become_the_world_models_settings():
    wm = ModelOptions("mock", temperature=0.5, seed=3, max_tokens=77, no_cache=True, guard=True).world_model()
    assert wm.backend.name == "mock" and wm.cache is None and wm.guard
    assert (wm.config.temperature, wm.config.seed, wm.config.max_tokens) == (0.5, 3, 77)
    assert ModelOptions().model == DEFAULT_SPEC


def test_a_packaged_model_is_asked_as_trained_unless_told_otherwise():
    shipped = ModelOptions("embedded:lwm-mini").world_model()
    assert shipped.edits and shipped.retriever is not None
    plain = ModelOptions("embedded:lwm-mini", edits=False, no_retrieve=True).world_model()
    assert not plain.edits and plain.retriever is None
