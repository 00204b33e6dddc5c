"""The packaged GGUF converted once into a Hugging Face folder: special tokens as the GGUF names them, a cache
an older conversion does not satisfy, and ranks of ``accelerate launch`` that share one copy."""

import json

import pytest

pytest.importorskip("transformers")
pytest.importorskip("gguf")


@pytest.mark.slow
def test_the_converted_base_ends_a_turn_where_the_gguf_does_and_an_older_conversion_is_redone(tmp_path):
    from transformers import AutoConfig, AutoTokenizer

    from lwm.train.base_model import CONVERTED, base_model_dir

    folder = base_model_dir("smollm2", cache_dir=tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.eos_token_id == 2  # the GGUF's eos id
    assert AutoConfig.from_pretrained(folder).eos_token_id == 2
    # a folder from before the fix (no marker, a wrong end token) is converted again, not trusted
    (folder / CONVERTED).unlink()
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "eos_token": "<|im_start|>"}))
    again = base_model_dir("smollm2", cache_dir=tmp_path)
    assert again == folder and (folder / CONVERTED).is_file()
    assert AutoTokenizer.from_pretrained(folder).eos_token == "<|im_end|>"


def test_a_rank_whose_copy_has_no_weights_waits_for_the_main_process_copy(tmp_path):
    import threading

    from lwm.train.base_model import CONVERTED, _publish

    folder, ours = tmp_path / "base", tmp_path / "base.2.tmp"
    ours.mkdir()
    (ours / "tokenizer.json").write_text("{}")  # what a non-zero rank's save leaves: no weights, no marker
    main = tmp_path / "base.1.tmp"
    main.mkdir()
    (main / CONVERTED).write_text("{}")
    threading.Timer(0.3, lambda: _publish(main, folder, CONVERTED)).start()
    assert _publish(ours, folder, CONVERTED, wait_s=30) == folder
    assert (folder / CONVERTED).is_file() and not ours.exists()
