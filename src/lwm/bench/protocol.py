"""The published AgentWorldBench protocol, read at run time from a checkout of QwenLM/Qwen-AgentWorld.

Their prompts and layout are theirs: lwm carries none of their text. ``--protocol DIR`` points at a
checkout and this module reads it as data, never executing it: the judge user template, the per-domain
settings (answer tags, observation marker, prompt paths) and the score dimensions from
``eval/lwm_eval_utils/task_configs.py`` (by parsing the module, ``ast.literal_eval`` of its constants),
the four labelled blocks the judge message is built from and the sampling defaults from ``eval/eval.py``
(its f-strings and ``add_argument(..., default=)`` calls), and each domain's judge system prompt from
the file the settings name. With these, lwm's requests are the published script's, message for message.
"""

from __future__ import annotations

import ast
import hashlib
import subprocess
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from lwm.backends import Message
from lwm.bench.rules import DIMENSIONS
from lwm.bench.samples import BenchSample
from lwm.parsing import OBSERVATION_TAG, published_output, remove_marker

CONFIGS_FILE = "eval/lwm_eval_utils/task_configs.py"
SCRIPT_FILE = "eval/eval.py"
KNOWN = ("context", "current_prompt", "model_output_clean", "ground_truth_clean")
"""The names the published layout's f-strings may use, and what lwm gives them."""


class ProtocolError(ValueError):
    """The checkout is not one lwm can read the protocol from; says which file and what is missing."""


@dataclass(frozen=True)
class PublishedProtocol:
    root: Path
    revision: str
    user_template: str
    blocks: dict[str, str]
    """The keyword arguments of the user template, each a ``str.format`` template over ``KNOWN`` names."""
    context_header: str
    configs: dict[str, dict[str, Any]]
    judge_prompts: dict[str, str]
    defaults: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per stage (``infer``, ``judge``): the script's option defaults (``max_tokens``, ``temperature``, …)."""

    # --- per-domain settings, as the script falls back ------------------------------------------------
    def config(self, domain: str) -> dict[str, Any]:
        return self.configs.get(domain, self.configs.get("mcp", {}))

    def marker(self, domain: str) -> str:
        return self.configs.get(domain, {}).get("response_marker", "")

    def answer_tag(self, domain: str) -> str:
        return self.config(domain).get("response_tag", OBSERVATION_TAG)

    def verdict_tag(self, domain: str) -> str:
        return self.config(domain).get("judge_response_tag", "final_evaluation")

    def extracted_output(self, domain: str, gen: str) -> str:
        return published_output(gen, self.answer_tag(domain))

    # --- the requests ---------------------------------------------------------------------------------
    def inference_messages(self, sample: BenchSample) -> list[Message]:
        return sample.conversation().messages()

    def judge_messages(self, sample: BenchSample, extracted: str) -> list[Message]:
        """The judge's system and user messages for ``extracted`` (the prediction as extracted from ``gen``)."""
        history = "".join(f"{p}\n{r}\n\n" for p, r in sample.history)
        names = {"context": history, "current_prompt": sample.current,
                 "model_output_clean": remove_marker(extracted, self.marker(sample.domain)),
                 "ground_truth_clean": remove_marker(sample.raw_reference, self.marker(sample.domain))}
        context = self.context_header.format(**names) if history else ""
        blocks = {key: template.format(**{**names, "context": context}) for key, template in self.blocks.items()}
        user = self.user_template.format(**blocks).strip()
        return [{"role": "system", "content": self.judge_prompts.get(sample.domain, "")},
                {"role": "user", "content": user}]


def load_protocol(root: str | Path) -> PublishedProtocol:
    """Read the protocol from a checkout; ProtocolError names what is missing."""
    return _load(str(Path(root).expanduser().resolve()))


@cache
def _load(root_text: str) -> PublishedProtocol:
    root = Path(root_text)
    configs_tree, script_tree = _parse(root, CONFIGS_FILE), _parse(root, SCRIPT_FILE)
    constants = _constants(configs_tree)
    for name in ("JUDGE_USER_PROMPT", "TASK_CONFIGS", "SCORE_DIMENSIONS"):
        if name not in constants:
            raise ProtocolError(f"{root / CONFIGS_FILE}: no {name} constant (is this a Qwen-AgentWorld checkout?)")
    if tuple(constants["SCORE_DIMENSIONS"]) != DIMENSIONS:
        raise ProtocolError(f"{root / CONFIGS_FILE}: SCORE_DIMENSIONS is {constants['SCORE_DIMENSIONS']}, "
                            f"lwm scores {list(DIMENSIONS)}")
    configs: dict[str, dict[str, Any]] = constants["TASK_CONFIGS"]
    judge_prompts = {}
    for domain, config in configs.items():
        path = root / config.get("judge_system_prompt_path", "")
        judge_prompts[domain] = path.read_text(encoding="utf-8") if path.is_file() else ""
    blocks, header = _judge_layout(root, script_tree)
    return PublishedProtocol(root=root, revision=_revision(root), user_template=constants["JUDGE_USER_PROMPT"],
                             blocks=blocks, context_header=header, configs=configs, judge_prompts=judge_prompts,
                             defaults=_option_defaults(script_tree))


def _parse(root: Path, relative: str) -> ast.Module:
    path = root / relative
    if not path.is_file():
        raise ProtocolError(f"--protocol {root}: no {relative} (point it at a checkout of QwenLM/Qwen-AgentWorld)")
    try:
        return ast.parse(path.read_text(encoding="utf-8"), str(path))
    except SyntaxError as exc:
        raise ProtocolError(f"{path}: not readable as Python: {exc}") from None


def _constants(tree: ast.Module) -> dict[str, Any]:
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return found


def _template(node: ast.expr, where: str) -> str:
    """An f-string (or a bare name) as a ``str.format`` template over the names it uses."""
    if isinstance(node, ast.Name):
        return "{" + _known(node.id, where) + "}"
    if not isinstance(node, ast.JoinedStr):
        raise ProtocolError(f"{where}: expected an f-string in the judge layout, found {ast.unparse(node)}")
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value).replace("{", "{{").replace("}", "}}"))
        elif isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name) and value.format_spec is None:
            parts.append("{" + _known(value.value.id, where) + "}")
        else:
            raise ProtocolError(f"{where}: the judge layout uses {ast.unparse(value)}, which lwm cannot read")
    return "".join(parts)


def _known(name: str, where: str) -> str:
    if name not in KNOWN:
        raise ProtocolError(f"{where}: the judge layout uses {{{name}}}; lwm knows {', '.join(KNOWN)} "
                            "(the layout of eval.py as of July 2026)")
    return name


def _judge_layout(root: Path, tree: ast.Module) -> tuple[dict[str, str], str]:
    """The keyword blocks of ``JUDGE_USER_PROMPT.format(...)`` and the context header (``context = f"..."``)
    inside ``build_judge_messages``."""
    where = str(root / SCRIPT_FILE)
    builder = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "build_judge_messages"),
                   None)
    if builder is None:
        raise ProtocolError(f"{where}: no build_judge_messages function")
    blocks, header = None, None
    for node in ast.walk(builder):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "JUDGE_USER_PROMPT"):
            blocks = {k.arg: _template(k.value, where) for k in node.keywords if k.arg}
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.JoinedStr)
                and any(isinstance(t, ast.Name) and t.id == "context" for t in node.targets)):
            header = _template(node.value, where)
    if blocks is None or header is None:
        raise ProtocolError(f"{where}: build_judge_messages has no JUDGE_USER_PROMPT.format(...) call or no "
                            "context header")
    return blocks, header


def _option_defaults(tree: ast.Module) -> dict[str, dict[str, Any]]:
    """``{"infer": {"max_tokens": 32768, ...}, "judge": {...}}`` from the script's argparse sub-commands."""
    stage_of: dict[str, str] = {}
    defaults: dict[str, dict[str, Any]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and isinstance(node.targets[0], ast.Name):
            call = node.value
            if isinstance(call.func, ast.Attribute) and call.func.attr == "add_parser" and call.args \
                    and isinstance(call.args[0], ast.Constant):
                stage_of[node.targets[0].id] = str(call.args[0].value)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
                and isinstance(node.func.value, ast.Name) and node.func.value.id in stage_of and node.args
                and isinstance(node.args[0], ast.Constant)):
            default = next((k.value for k in node.keywords if k.arg == "default"), None)
            if isinstance(default, ast.Constant) and default.value is not None:
                name = str(node.args[0].value).lstrip("-").replace("-", "_")
                defaults.setdefault(stage_of[node.func.value.id], {})[name] = default.value
    return defaults


def _revision(root: Path) -> str:
    """The checkout's commit, else a digest of the two files read (recorded with each run)."""
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10, check=False)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    digest = hashlib.sha256()
    for relative in (CONFIGS_FILE, SCRIPT_FILE):
        digest.update((root / relative).read_bytes())
    return "sha256:" + digest.hexdigest()[:16]
