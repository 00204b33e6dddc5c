"""``lwm simulate``: one predicted observation for one action, from a given state."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from lwm.backends import BackendError
from lwm.cli import options as o
from lwm.cli.common import fail, load_state
from lwm.domains import ActionError, get_domain
from lwm.forms import answer_note
from lwm.worldmodel import ContextOverflowError


@o.model_options(**o.INTERACTIVE)
def simulate(
    action: Annotated[str, typer.Option(help="The action in the domain's format ('-' reads stdin).")],
    domain: Annotated[str | None, typer.Option(help="mcp, search, terminal, swe, web, os, android (default: the "
                                                    "--history's domain, else terminal).")] = None,
    context: Annotated[Path | None, typer.Option(help="Context JSON (task, tools, initial_state).")] = None,
    history: Annotated[Path | None, typer.Option(help="Trajectory JSON whose turns come before the action.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a machine-readable result.")] = False,
    *,
    options: o.ModelOptions,
) -> None:
    """Predict the environment's next observation after the --action (given --history, or from its start)."""
    trajectory = load_state(domain, context, history)
    text = sys.stdin.read() if action == "-" else action
    try:
        parsed = get_domain(trajectory.domain).action_from_text(text)
        wm = options.world_model()
        observation = wm.predict_sync(trajectory, parsed)
    except ActionError as exc:
        raise fail(str(exc), 2) from None
    except (BackendError, ContextOverflowError, ValueError, KeyError) as exc:
        raise fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps({
            "domain": trajectory.domain, "turn": len(trajectory.turns) + 1, "action": parsed.content,
            "observation": observation.content, "reasoning": observation.reasoning, "raw": observation.raw,
            "metadata": observation.metadata,
        }, ensure_ascii=False, indent=2))
    else:
        typer.echo(observation.content)
        said = answer_note(observation.metadata, observation.content)
        if said:
            typer.echo(f"lwm: {said}", err=True)


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate)
