"""``lwm train``: the CPT, SFT and RL stages over TRL."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

train_app = typer.Typer(help="Train world models (CPT, SFT, RL) over TRL.", no_args_is_help=True)


Config = Annotated[Path, typer.Option(help="YAML or JSON stage config (see lwm.train.config).")]
Overrides = Annotated[list[str] | None, typer.Option("--set", help="Override a field: key=value.")]


def _config(cls: type, path: Path, overrides: list[str] | None) -> Any:
    import yaml

    from lwm.train.config import load_config

    values = {k: yaml.safe_load(v) for k, _, v in (item.partition("=") for item in overrides or [])}
    try:
        return load_config(cls, path, **values)
    except (ValueError, OSError) as exc:
        raise typer.BadParameter(str(exc)) from None


def _report(cfg: Any, metrics: dict[str, Any]) -> None:
    Console().print(f"trained {metrics.get('train_runtime', 0):.1f} s, loss {metrics.get('train_loss', 0):.4f}"
                    + (f", resumed from {metrics['resumed_from']}" if metrics.get("resumed_from") else "")
                    + f"; final model in {Path(cfg.output_dir) / 'final'}")


@train_app.command("cpt")
def cpt(config: Config, set_: Overrides = None) -> None:
    """Continual pre-training on packed trajectory text (lwm data build --stage cpt); resumes."""
    from lwm.train.config import SFTStageConfig
    from lwm.train.sft import train_sft

    cfg = _config(SFTStageConfig, config, set_)
    _report(cfg, train_sft(cfg, column="text"))


@train_app.command("sft")
def sft(config: Config, set_: Overrides = None) -> None:
    """Supervised fine-tuning on next-observation prediction (lwm data build --stage sft); resumes."""
    from lwm.train.config import SFTStageConfig
    from lwm.train.sft import train_sft

    cfg = _config(SFTStageConfig, config, set_)
    _report(cfg, train_sft(cfg))


@train_app.command("rl")
def rl(config: Config, set_: Overrides = None) -> None:
    """GRPO rewarded by the benchmark's rule metrics (lwm data build --stage rl); resumes."""
    from lwm.train.config import RLStageConfig
    from lwm.train.rl import train_rl

    cfg = _config(RLStageConfig, config, set_)
    _report(cfg, train_rl(cfg))


def register(app: typer.Typer) -> None:
    app.add_typer(train_app, name="train")
