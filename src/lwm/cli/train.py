"""``lwm train``: training stages over TRL (so far: sft)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

train_app = typer.Typer(help="Train world models (CPT, SFT, RL) over TRL.", no_args_is_help=True)


@train_app.command("sft")
def sft(config: Annotated[Path, typer.Option(help="YAML or JSON stage config (see lwm.train.config).")],
        set_: Annotated[list[str] | None, typer.Option("--set", help="Override a field: key=value.")] = None) -> None:
    """Supervised fine-tuning on next-observation prediction; resumes from the last checkpoint."""
    import yaml

    from lwm.train.config import SFTStageConfig, load_config
    from lwm.train.sft import train_sft

    overrides = {k: yaml.safe_load(v) for k, _, v in (item.partition("=") for item in set_ or [])}
    try:
        cfg = load_config(SFTStageConfig, config, **overrides)
    except (ValueError, OSError) as exc:
        raise typer.BadParameter(str(exc)) from None
    metrics = train_sft(cfg)
    Console().print(f"trained {metrics.get('train_runtime', 0):.1f} s, loss {metrics.get('train_loss', 0):.4f}"
                    + (f", resumed from {metrics['resumed_from']}" if metrics.get("resumed_from") else "")
                    + f"; final model in {Path(cfg.output_dir) / 'final'}")


def register(app: typer.Typer) -> None:
    app.add_typer(train_app, name="train")
