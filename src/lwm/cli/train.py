"""``lwm train``: the CPT, SFT and RL stages over TRL, and export back to llama.cpp."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from lwm.cli.common import report_training, stage_config

train_app = typer.Typer(help="Train world models (CPT, SFT, RL) over TRL.", no_args_is_help=True)


Config = Annotated[Path, typer.Option(help="YAML or JSON stage config (see lwm.train.config).")]
Overrides = Annotated[list[str] | None, typer.Option("--set", help="Override a field: key=value.")]


@train_app.command("cpt")
def cpt(config: Config, set_: Overrides = None) -> None:
    """Continual pre-training on packed trajectory text (lwm data build --stage cpt); resumes."""
    from lwm.train.config import SFTStageConfig
    from lwm.train.sft import train_sft

    cfg = stage_config(SFTStageConfig, config, set_)
    report_training(cfg, train_sft(cfg, column="text"))


@train_app.command("sft")
def sft(config: Config, set_: Overrides = None) -> None:
    """Supervised fine-tuning on next-observation prediction (lwm data build --stage sft); resumes."""
    from lwm.train.config import SFTStageConfig
    from lwm.train.sft import train_sft

    cfg = stage_config(SFTStageConfig, config, set_)
    report_training(cfg, train_sft(cfg))


@train_app.command("rl")
def rl(config: Config, set_: Overrides = None) -> None:
    """GRPO rewarded by the benchmark's rule metrics (lwm data build --stage rl); resumes."""
    from lwm.train.config import RLStageConfig
    from lwm.train.rl import train_rl

    cfg = stage_config(RLStageConfig, config, set_)
    report_training(cfg, train_rl(cfg))


@train_app.command("export")
def export(
    model_dir: Annotated[Path, typer.Argument(help="A stage's output_dir/final: a LoRA folder or a full model.")],
    out: Annotated[Path, typer.Option(help="The .gguf file to write.")],
    base: Annotated[str, typer.Option(help="The base GGUF trained from (packaged name or path): its "
                                           "metadata and tokenizer are reused.")] = "smollm2",
    merge: Annotated[bool, typer.Option(help="Write a whole model (LoRA merged in) instead of an adapter.")] = False,
    dtype: Annotated[str, typer.Option(help="f16 or f32 tensors.")] = "f16",
    quantize: Annotated[str | None, typer.Option(help="Quantize the whole model, e.g. Q4_1 or Q8_0.")] = None,
) -> None:
    """Export for the embedded backend (llama.cpp): a LoRA adapter GGUF, or a merged (quantized) model."""
    import tempfile

    from lwm.train import export as ex
    from lwm.train.merge import export_model

    if dtype not in ("f16", "f32"):
        raise typer.BadParameter("dtype must be f16 or f32")
    console = Console()
    adapter = (model_dir / "adapter_config.json").is_file()
    try:
        if adapter and not merge and not quantize:
            ex.export_adapter(model_dir, out, base, dtype)
            console.print(f"LoRA adapter written to {out} ({out.stat().st_size / 1e6:.1f} MB); use it with "
                          f"--model 'embedded:{base}?lora={out}'")
            return
        if not quantize:
            export_model(model_dir, out, base, dtype)
        else:
            with tempfile.TemporaryDirectory(dir=out.parent if out.parent.exists() else None) as tmp:
                ex.quantize(export_model(model_dir, Path(tmp) / "model.gguf", base, dtype), out, quantize)
    except ex.ExportError as exc:
        raise typer.BadParameter(str(exc)) from None
    console.print(f"model written to {out} ({out.stat().st_size / 1e6:.1f} MB); use it with --model 'embedded:{out}'")


def register(app: typer.Typer) -> None:
    app.add_typer(train_app, name="train")
