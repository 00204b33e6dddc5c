"""What the ``lwm`` commands share: the error exit, the session a command continues, and how a training
command reads its config and reports its run. Pipeline logic lives in the packages these call, not here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from lwm.domains import get_domain
from lwm.types import Trajectory, load_context


def fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"lwm: error: {message}", err=True)
    return typer.Exit(code)


def load_state(domain: str | None, context: Path | None, history: Path | None) -> Trajectory:
    """The session to continue: a trajectory file's turns, a context file's context, or a fresh one."""
    try:
        trajectory = Trajectory.load(history) if history else Trajectory(domain=domain or "terminal")
        if domain and domain != trajectory.domain:
            raise fail(f"--domain {domain} does not match the history's domain {trajectory.domain}", 2)
        if context:
            trajectory = trajectory.model_copy(update={"context": load_context(context)})
        get_domain(trajectory.domain)
    except (ValueError, KeyError) as exc:
        raise fail(str(exc), 2) from None
    return trajectory


def stage_config(cls: type, path: Path, overrides: list[str] | None) -> Any:
    """A stage config from a YAML/JSON file with ``--set key=value`` overrides (values read as YAML)."""
    import yaml

    from lwm.train.config import load_config

    values = {k: yaml.safe_load(v) for k, _, v in (item.partition("=") for item in overrides or [])}
    try:
        return load_config(cls, path, **values)
    except (ValueError, OSError) as exc:
        raise typer.BadParameter(str(exc)) from None


def report_training(cfg: Any, metrics: dict[str, Any]) -> None:
    """One line on a finished (or time-boxed) training run: time, loss, where the model is, how to go on."""
    if not metrics.get("main_process", True):  # another rank of accelerate launch: rank 0 reports
        return
    Console().print(f"trained {metrics.get('train_runtime', 0):.1f} s, loss {metrics.get('train_loss', 0):.4f}"
                    + (f", resumed from {metrics['resumed_from']}" if metrics.get("resumed_from") else "")
                    + f"; final model in {Path(cfg.output_dir) / 'final'}"
                    + (f" (stopped at step {metrics['global_step']} by max_minutes: run the same command again to go "
                       "on)" if metrics.get("stopped_early") else ""))
