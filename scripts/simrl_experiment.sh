#!/usr/bin/env bash
# The Sim RL experiment on the search suite's one-row lookups (issue 45, docs/sim-rl.md), in pieces that each
# end inside a session; rerunnable: a finished piece is skipped, training resumes from its last checkpoint and
# an evaluation from its results.jsonl. Every arm is evaluated in the REAL search engine on the 60 held-out
# lookups, once per seed greedily and once sampled as GRPO samples (temperature 1), and added to
# results/simrl-lookup (committed: episodes.jsonl, config.json, and the warm start's adapter), so the next
# checkout goes on where this one stopped.
#   scripts/simrl_experiment.sh warm           demos, the warm-start SFT, its evals (greedy and sampled) per seed
#   scripts/simrl_experiment.sh ARM            ARM in real, sim, sim-retrieved, sim-control, sim-page: GRPO per seed,
#                                              then evals
#   scripts/simrl_experiment.sh table          the tables docs/sim-rl.md shows (lwm agent experiment table), greedy
#                                              and sampled, at seeds 0-2 and at the confirmation seeds 3-4
# ARM's config: configs/agent/rl-lookup-{real,sim,sim-retrieved,sim-fictional,sim-page}.yaml (sim-control is the
# controlled variant: the simulator also serves made-up lookups rewarded for agreeing with its own page; sim-page
# rewards sim's own lookups by what the simulated page said, not the real gold row). Budgets:
#   SEEDS="0 1 2" STEPS=12 LR=0.00015 MINUTES=170 scripts/simrl_experiment.sh real
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS=${SEEDS:-0 1 2}; STEPS=${STEPS:-12}; LR=${LR:-0.00015}; MINUTES=${MINUTES:-170}
LWM=${LWM:-$PWD/.venv/bin/lwm}
A=runs/agent; R=results/simrl-lookup; EV=$A/eval-simrl
EVAL=(--domain search --family syscall-lookup --family pymodule-lookup --split heldout --mode real --max-steps 3
      --max-tokens 96 --batch 20)
mkdir -p "$EV" "$R"

warm() {
  [ -s $A/demos-lookup.jsonl ] || $LWM agent demos --family syscall-lookup --family pymodule-lookup \
      --out $A/demos-lookup.jsonl
  if [ ! -f $R/warm-adapter/adapter_config.json ]; then
    [ -f $A/sft-lookup/final/adapter_config.json ] || $LWM train sft --config configs/agent/sft-search-lookup.yaml
    mkdir -p $R/warm-adapter  # committed: the adapter in fp16 (4.9 MB), its config
    cp $A/sft-lookup/final/adapter_config.json $R/warm-adapter/
    .venv/bin/python -c "import sys, torch; from safetensors.torch import load_file, save_file
save_file({k: v.to(torch.float16) for k, v in load_file(sys.argv[1]).items()}, sys.argv[2])" \
        $A/sft-lookup/final/adapter_model.safetensors $R/warm-adapter/adapter_model.safetensors
  fi
  # greedy, once: the warm start answers alike at every seed, so the table pairs it with each RL seed by task
  $LWM agent eval "${EVAL[@]}" --policy hf:$R/warm-adapter --out $EV/warm
  $LWM agent experiment add $R $EV/warm --arm warm \
      --note "SFT on 480 expert rows (configs/agent/sft-search-lookup.yaml), evaluated greedy once"
  sampled=()
  for s in $SEEDS; do  # sampled as GRPO samples it: how often a task's samples disagree (a group's gradient)
    $LWM agent eval "${EVAL[@]}" --policy hf:$R/warm-adapter --temperature 1.0 --seed "$s" --out $EV/warm-t1-s$s
    sampled+=($EV/warm-t1-s$s)
  done
  spread=$R/warm-spread.txt  # seeds 0-2; a confirmation at other seeds keeps its own file
  [ "$SEEDS" = "0 1 2" ] || spread=$R/warm-spread-seeds-${SEEDS// /-}.txt
  $LWM agent experiment spread "${sampled[@]}" | tee "$spread"
  $LWM agent experiment add $R "${sampled[@]}" --arm warm \
      --note "SFT on 480 expert rows (configs/agent/sft-search-lookup.yaml), evaluated greedy once and sampled per seed"
}

pages() {  # the real engine's pages of the expert's searches on the TRAIN lookups (what the simulators learn from)
  [ -d $A/demos-lookup-real ] || $LWM agent demos --family syscall-lookup --family pymodule-lookup \
      --out $A/demos-lookup-rows.jsonl --record $A/demos-lookup-real
}

world() {  # the simulator of the sim arms: lwm-mini fine-tuned on the real engine's pages of the TRAIN lookups
  [ -s $A/wm-lookup.gguf ] && return
  pages
  [ -s $A/wm-lookup-sft.jsonl ] || $LWM data build $A/demos-lookup-real --stage sft --compact --out $A/wm-lookup-sft.jsonl
  [ -f $A/wm-lookup/final/adapter_config.json ] || $LWM train sft --config configs/agent/wm-search-lookup.yaml
  $LWM train export $A/wm-lookup/final --out $A/wm-lookup.gguf
}

arm() {  # ARM CONFIG: GRPO from the warm start at each seed, each evaluated in the real engine greedy and sampled
  evals=()
  for s in $SEEDS; do
    out=$A/simrl-$1-s$s
    [ -f $out/final/adapter_config.json ] || $LWM agent train --config configs/agent/$2.yaml \
        --set model=$R/warm-adapter --set output_dir=$out --set seed=$s --set max_steps=$STEPS \
        --set learning_rate=$LR --set max_minutes=$MINUTES
    $LWM agent eval "${EVAL[@]}" --policy hf:$out/final --seed "$s" --out $EV/$1-s$s
    $LWM agent eval "${EVAL[@]}" --policy hf:$out/final --seed "$s" --temperature 1.0 --out $EV/$1-t1-s$s
    evals+=($EV/$1-s$s $EV/$1-t1-s$s)
  done
  $LWM agent experiment add $R "${evals[@]}" --arm "$1" --note "configs/agent/$2.yaml, $STEPS steps, lr $LR"
}

case "${1:-}" in
  warm) warm ;;
  real) arm real rl-lookup-real ;;
  sim) world; arm sim rl-lookup-sim ;;
  sim-retrieved) pages; arm sim-retrieved rl-lookup-sim-retrieved ;;  # lwm-mini retrieving those pages
  sim-control) world; arm sim-control rl-lookup-sim-fictional ;;
  sim-page) world; arm sim-page rl-lookup-sim-page ;;  # sim's tasks, rewarded by what the simulated page said
  table)  # the seeds the experiment was planned with, then the confirmation at new seeds (warm, real, sim-page)
    for seeds in "--seed 0 --seed 1 --seed 2" "--seed 3 --seed 4"; do
      $LWM agent experiment table $R --markdown $seeds; $LWM agent experiment table $R --markdown --temperature 1 $seeds
    done ;;
  *) echo "usage: $0 warm|real|sim|sim-retrieved|sim-control|sim-page|table" >&2; exit 2 ;;
esac
