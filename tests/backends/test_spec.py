import pytest

from lwm.backends import MockBackend, load_backend, parse_spec
from lwm.backends.openai import OpenAIBackend
from lwm.registry import UnknownPartError


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("embedded", ("embedded", None, {})),
        ("embedded:/m/x.gguf?lora=/a.gguf&n_ctx=8192", ("embedded", "/m/x.gguf", {"lora": "/a.gguf", "n_ctx": 8192})),
        ("openai:Qwen/Qwen-AgentWorld-35B-A3B", ("openai", "Qwen/Qwen-AgentWorld-35B-A3B", {})),
        ("openai:llama3:8b?timeout=2.5&concurrency=4", ("openai", "llama3:8b", {"timeout": 2.5, "concurrency": 4})),
        ("mock", ("mock", None, {})),
        ("transformers:./ckpt?compact=true", ("transformers", "./ckpt", {"compact": True})),
    ],
)
def test_parse_spec(spec, expected):
    assert parse_spec(spec) == expected


def test_load_backend_passes_options():
    backend = load_backend("openai:m?concurrency=2", base_url="http://127.0.0.1:1/v1", api_key="k")
    assert isinstance(backend, OpenAIBackend)
    assert backend.concurrency == 2 and backend.base_url == "http://127.0.0.1:1/v1" and backend.api_key == "k"
    assert isinstance(load_backend("mock", base_url=None), MockBackend)


def test_errors_name_the_problem():
    with pytest.raises(UnknownPartError, match="unknown backend 'vllm'; known: copy-last, copy-retrieved, echo-action, embedded, mock, openai"):
        load_backend("vllm:x")
    with pytest.raises(ValueError, match="needs a model name"):
        load_backend("openai")
    with pytest.raises(ValueError, match="bad options"):
        load_backend("openai:m?colour=blue")


def test_spec_options_are_known_and_of_the_declared_type():
    with pytest.raises(ValueError, match="unknown option 'foo'.*it takes: context_window, name"):
        load_backend("mock?foo=1")
    with pytest.raises(ValueError, match="n_threads='abc' should be int"):
        load_backend("embedded?n_threads=abc")
    assert load_backend("mock?name=x").name == "mock"  # known: accepted (from_spec names it)
