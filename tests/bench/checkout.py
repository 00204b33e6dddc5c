"""A stand-in checkout laid out as QwenLM/Qwen-AgentWorld's evaluation is, in our own words.

lwm reads the published protocol from a user's checkout as data; tests cannot ship that checkout, so this
writes files with the same structure (constants in ``task_configs.py``, the judge layout as f-strings in
``build_judge_messages``, argparse defaults in ``eval.py``) and deliberately different wording and numbers,
so a test passes only if lwm reads them rather than assuming them.
"""

from __future__ import annotations

from pathlib import Path

CONFIGS = '''
SCORE_DIMENSIONS = ["format", "factuality", "consistency", "realism", "quality"]
TASK_CONFIGS = {
    "terminal": {
        "response_marker": "[[obs]]",
        "response_tag": "predicted_observation",
        "judge_response_tag": "verdict",
        "judge_system_prompt_path": "prompts/terminal/judge_system_prompt.txt",
    },
    "mcp": {
        "response_marker": "[[obs]]",
        "response_tag": "predicted_observation",
        "judge_response_tag": "verdict",
        "judge_system_prompt_path": "prompts/mcp/judge_system_prompt.txt",
    },
}
JUDGE_USER_PROMPT = """{context}

{world_model_input}

{predicted_observation}

{ground_truth}

Rate it, five numbers in {{"scores": ...}} inside <verdict>."""
'''

SCRIPT = '''
import argparse

from lwm_eval_utils import JUDGE_USER_PROMPT


def build_judge_messages(job, model_output, judge_system_prompts):
    context = ""
    if context:
        context = f"## Earlier:\\n{context}"
    user_prompt = JUDGE_USER_PROMPT.format(
        context=context,
        world_model_input=f"## Now:\\n{current_prompt}",
        predicted_observation=f"SIM<<{model_output_clean}>>",
        ground_truth=f"REAL<<{ground_truth_clean}>>",
    ).strip()
    return user_prompt


def main():
    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers(dest="command")
    p_infer = subparsers.add_parser("infer")
    p_infer.add_argument("--max-tokens", type=int, default=30000)
    p_infer.add_argument("--temperature", type=float, default=0.7)
    p_judge = subparsers.add_parser("judge")
    p_judge.add_argument("--max-tokens", type=int, default=20000)
    p_judge.add_argument("--temperature", type=float, default=0.3)
    p_judge.add_argument("--max-retries", type=int, default=2)
'''

JUDGE_PROMPT = "  You judge a simulated terminal.\n\n"


def write_checkout(root: Path) -> Path:
    (root / "eval" / "lwm_eval_utils").mkdir(parents=True)
    (root / "eval" / "lwm_eval_utils" / "task_configs.py").write_text(CONFIGS)
    (root / "eval" / "eval.py").write_text(SCRIPT)
    for domain in ("terminal", "mcp"):
        (root / "prompts" / domain).mkdir(parents=True)
        (root / "prompts" / domain / "judge_system_prompt.txt").write_text(
            JUDGE_PROMPT if domain == "terminal" else "Judge a simulated tool server.")
    return root
