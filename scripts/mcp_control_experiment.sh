#!/usr/bin/env bash
# Controlled vs uncontrolled Sim RL on the MCP suite (issue 33.3, docs/sim-rl.md), end to end on a CPU box:
# warm start, the two GRPO arms one after the other (one peaks at ~12 GB), then every policy evaluated in the
# REAL servers, clean and with configs/agent/control-mcp.yaml's faults at six seeds. Rerunnable: training resumes
# from its last checkpoint, an evaluation goes on from its results.jsonl, finished steps are skipped.
#   LR=0.00015 STEPS=24 MINUTES=50 TAG=lr15e5 scripts/mcp_control_experiment.sh
set -euo pipefail
cd "$(dirname "$0")/.."
LR=${LR:-0.00015}; STEPS=${STEPS:-24}; MINUTES=${MINUTES:-50}; TAG=${TAG:-lr15e5}
LWM=${LWM:-$PWD/.venv/bin/lwm}
A=runs/agent; EV=$A/eval-mcp
mkdir -p "$EV"

[ -s $A/demos-mcp.jsonl ] || $LWM agent demos --domain mcp --out $A/demos-mcp.jsonl
[ -d $A/sft-mcp/final ] || $LWM train sft --config configs/agent/sft-mcp.yaml

# An arm is done when a checkpoint reached STEPS: one stopped by MINUTES also writes final, and goes on when rerun.
reached() { python3 -c "import json,glob,sys; sys.exit(max([json.load(open(f))['global_step'] for f in
  glob.glob('$1/checkpoint-*/trainer_state.json')] or [0]) < $STEPS)"; }
for arm in rl-mcp-sim rl-mcp-sim-control; do
  reached $A/$arm-$TAG || $LWM agent train --config configs/agent/$arm.yaml \
      --set output_dir=$A/$arm-$TAG --set learning_rate=$LR --set max_steps=$STEPS --set max_minutes=$MINUTES \
      2>&1 | tee -a $A/$arm-$TAG.log
done

E=(--domain mcp --mode real --max-steps 4 --batch 12 --max-tokens 96)
evaluate() {  # NAME POLICY: clean, then faults at seeds 0, 1000, ..., 5000
  $LWM agent eval "${E[@]}" --policy "$2" --out $EV/$1-real
  for s in 0 1000 2000 3000 4000 5000; do
    suffix=$([ $s = 0 ] && echo "" || echo "-s$s")
    $LWM agent eval "${E[@]}" --policy "$2" --control configs/agent/control-mcp.yaml --seed $s \
        --out $EV/$1-real-faults$suffix
  done
}
evaluate expert expert
evaluate sft hf:$A/sft-mcp/final
evaluate rl-mcp-sim-$TAG hf:$A/rl-mcp-sim-$TAG/final
evaluate rl-mcp-sim-control-$TAG hf:$A/rl-mcp-sim-control-$TAG/final

F() { echo $1-real-faults+$1-real-faults-s1000+$1-real-faults-s2000+$1-real-faults-s3000+$1-real-faults-s4000+$1-real-faults-s5000; }
cd $EV
$LWM agent compare $(F sft) $(F expert) $(F rl-mcp-sim-$TAG) $(F rl-mcp-sim-control-$TAG)
$LWM agent compare $(F rl-mcp-sim-$TAG) $(F rl-mcp-sim-control-$TAG)
$LWM agent compare sft-real expert-real rl-mcp-sim-$TAG-real rl-mcp-sim-control-$TAG-real
echo ALLDONE
