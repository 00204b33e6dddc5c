"""Training throughput: ``lwm train sft`` against a plain TRL script, same model, data and settings.

Each run is its own process (fresh threads and allocator), runs alternate lwm / TRL / lwm / TRL so
machine noise hits both, and the timed part is ``trainer.train()`` only (model loading is excluded
from both). Tokens/s = tokens trained on (TRL's ``num_tokens``) / train runtime. Target: lwm >= 95%.

    python benchmarks/train_throughput.py [--data SFT.jsonl] [--steps 8] [--rounds 2]

Without ``--data`` the rows are built from the packaged corpus sample (data/samples).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {"lora_r": 8, "lora_alpha": 16, "lora_target_modules": ["q_proj", "v_proj"], "batch_size": 2,
            "learning_rate": 2e-4, "max_length": 512, "seed": 0}


def run_lwm(data: str, out: str, steps: int) -> dict:
    from lwm.train.config import SFTStageConfig
    from lwm.train.sft import train_sft

    lora = {k: v for k, v in SETTINGS.items() if k.startswith("lora")}
    trainer = {k: v for k, v in SETTINGS.items() if k not in lora}
    trainer["per_device_train_batch_size"] = trainer.pop("batch_size")
    config = SFTStageConfig(data=data, output_dir=out, resume=False, **lora, trainer={
        **trainer, "max_steps": steps, "save_steps": 10_000, "logging_steps": 1})
    metrics = train_sft(config)
    return {"runtime": metrics["train_runtime"], "tokens": metrics["log"][-2]["num_tokens"]}


def run_trl(data: str, out: str, steps: int) -> dict:
    """What a user would write with TRL directly, from the same converted base folder."""
    import torch
    from datasets import load_dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from lwm.train.base_model import base_model_dir

    torch.manual_seed(SETTINGS["seed"])
    folder = base_model_dir("smollm2")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    dataset = load_dataset("json", data_files=data, split="train").select_columns(["prompt", "completion"])
    args = SFTConfig(output_dir=out, max_steps=steps, per_device_train_batch_size=SETTINGS["batch_size"],
                     learning_rate=SETTINGS["learning_rate"], max_length=SETTINGS["max_length"], seed=SETTINGS["seed"],
                     save_steps=10_000, logging_steps=1, report_to=[], use_cpu=True, gradient_checkpointing=False)
    peft = LoraConfig(r=SETTINGS["lora_r"], lora_alpha=SETTINGS["lora_alpha"],
                      target_modules=SETTINGS["lora_target_modules"], task_type="CAUSAL_LM")
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer, peft_config=peft)
    result = trainer.train()
    return {"runtime": result.metrics["train_runtime"], "tokens": trainer.state.log_history[-2]["num_tokens"]}


def build_sample_data(folder: Path) -> str:
    from lwm.data.build import build
    from lwm.data.store import read_trajectories

    out = folder / "sft.jsonl"
    trajectories = list(read_trajectories(ROOT / "data/samples/corpus-v1-sample.jsonl"))
    build("sft", trajectories, out, compact=True, max_tokens=SETTINGS["max_length"])
    return str(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--one", choices=["lwm", "trl"], help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        result = (run_lwm if args.one == "lwm" else run_trl)(args.data, args.out, args.steps)
        print("RESULT " + json.dumps(result))
        return

    from rich.console import Console
    from rich.table import Table

    from lwm.train.base_model import base_model_dir

    console = Console()
    base_model_dir("smollm2")  # convert once, outside the timed runs
    with tempfile.TemporaryDirectory() as tmp:
        data = args.data or build_sample_data(Path(tmp))
        speeds: dict[str, list[float]] = {"lwm": [], "trl": []}
        for round_ in range(args.rounds):
            for who in ("lwm", "trl") if round_ % 2 == 0 else ("trl", "lwm"):
                with console.status(f"round {round_ + 1}/{args.rounds}: {who}, {args.steps} steps"):
                    proc = subprocess.run([sys.executable, __file__, "--one", who, "--data", data, "--steps",
                                           str(args.steps), "--out", f"{tmp}/{who}-{round_}"],
                                          capture_output=True, text=True)
                line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
                if line is None:
                    raise SystemExit(f"{who} run failed:\n{proc.stderr[-3000:]}")
                result = json.loads(line[len("RESULT "):])
                speeds[who].append(result["tokens"] / result["runtime"])
                console.print(f"{who}: {result['tokens']:.0f} tokens in {result['runtime']:.1f} s "
                              f"= {speeds[who][-1]:.0f} tokens/s")
    table = Table(title=f"SFT throughput, SmolLM2-135M LoRA r=8 q/v, batch 2 x <=512 tokens, {args.steps} steps")
    table.add_column("trainer")
    table.add_column("median tokens/s", justify="right")
    table.add_column("runs", justify="right")
    for who, values in speeds.items():
        table.add_row(who, f"{statistics.median(values):.0f}", ", ".join(f"{v:.0f}" for v in values))
    console.print(table)
    ratio = statistics.median(speeds["lwm"]) / statistics.median(speeds["trl"])
    console.print(f"lwm / plain TRL = {ratio:.1%} (target >= 95%)")


if __name__ == "__main__":
    main()
