"""Device placement and trainer settings that follow the installed versions and the machine."""

from dataclasses import dataclass

import pytest

from lwm.train.device import fit_field_names, trainer_defaults

pytest.importorskip("torch")


@dataclass
class Old:  # transformers 5.17's TrainingArguments spelling
    gradient_checkpointing: bool = True


@dataclass
class New:
    activation_checkpointing: bool = True


def test_the_checkpointing_switch_is_spelt_as_the_installed_config_class_spells_it():
    assert fit_field_names({"activation_checkpointing": False, "seed": 1}, Old) == \
        {"gradient_checkpointing": False, "seed": 1}
    assert fit_field_names({"gradient_checkpointing": False}, New) == {"activation_checkpointing": False}
    assert fit_field_names({"activation_checkpointing": False}, New) == {"activation_checkpointing": False}
    assert fit_field_names({"seed": 1}, Old) == {"seed": 1}


def test_a_stage_config_parses_under_either_spelling(tmp_path, monkeypatch):
    """lwm's defaults say activation_checkpointing; a TRL config class with only the old field still takes them."""
    import trl

    from lwm.train.config import SFTStageConfig

    names = {f.name for f in __import__("dataclasses").fields(trl.SFTConfig)}
    config = SFTStageConfig(data="x.jsonl", output_dir=str(tmp_path), trainer={"gradient_checkpointing": True})
    args = config.trl_args()
    assert getattr(args, next(n for n in ("activation_checkpointing", "gradient_checkpointing") if n in names))
    assert args.use_cpu is True and args.bf16 is False  # this machine has no GPU: fp32 on the CPU


def test_on_a_gpu_the_trainer_uses_it_in_bf16(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert trainer_defaults("cuda") == {"report_to": [], "dataloader_num_workers": 0, "save_total_limit": 2,
                                        "use_cpu": False, "bf16": True, "fp16": False}
    monkeypatch.setenv("LWM_DEVICE", "cpu")
    assert trainer_defaults()["use_cpu"] is True


class OnAnotherDevice:
    """Stands in for a model on another device ("meta"): records where generate's inputs are."""

    device = "meta"
    training = False

    def __init__(self):
        self.inputs_on = None

    def eval(self):
        return self

    def train(self, mode=True):
        return self

    def generate(self, input_ids, **kwargs):
        import torch

        self.inputs_on = {str(input_ids.device), *(str(v.device) for v in kwargs.values() if hasattr(v, "device"))}
        return torch.zeros((input_ids.shape[0], input_ids.shape[1] + 1), dtype=torch.long)


def test_a_policys_model_goes_to_the_best_device_and_its_inputs_follow_it(tiny_model_dir):
    import torch

    from lwm.rollout.policies import LocalPolicy

    policy = LocalPolicy.load(str(tiny_model_dir), max_new_tokens=3)
    assert policy.model.device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    policy.model = OnAnotherDevice()
    policy.reply([[{"role": "user", "content": "ls"}], [{"role": "user", "content": "pwd -P"}]])
    assert policy.model.inputs_on == {"meta"}


def test_the_transformers_backend_loads_a_lora_folder_as_hf_policies_do(tmp_path, tiny_model_dir):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from lwm.backends import GenerateConfig
    from lwm.worldmodel import WorldModel

    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    lora = get_peft_model(base, LoraConfig(r=2, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM",
                                           init_lora_weights=False))
    folder = tmp_path / "adapter"
    lora.save_pretrained(folder)
    AutoTokenizer.from_pretrained(tiny_model_dir).save_pretrained(folder)
    # the adapter config names the base folder, as lwm train's folders do
    import json

    config = json.loads((folder / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = str(tiny_model_dir)
    (folder / "adapter_config.json").write_text(json.dumps(config))
    wm = WorldModel(f"transformers:{folder}", config=GenerateConfig(max_tokens=4), cache=False)
    obs = wm.predict_sync(__import__("tests.samples", fromlist=["trajectory"]).trajectory("terminal", 1),
                          [{"keystrokes": "pwd\n", "duration": 0.1}])
    assert obs.raw is not None
    assert hasattr(wm.backend._model, "peft_config")  # the adapter is on, not just the base
