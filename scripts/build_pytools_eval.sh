#!/usr/bin/env bash
# Rebuilds data/pytools-lopo: the leave-packages-out eval set of the tool corpus (issue 60), from the committed
# corpus data/pytools/trajectories.jsonl.xz: holds out the 13 packages the seeded split
# `lwm data split --by source --heldout 0.2 --seed 0` chose from its 63, exports 48 samples (evenly spread over
# the held-out trajectories in the order the corpus lists them) as compact AgentWorldBench rows, xz-compressed.
# The result is the committed file byte for byte. With --collect, the held-out packages' episodes are collected
# again first (the `pytools` preset's own episodes: 100 trajectories, ~4 min on 2 cores); the workers finish in
# their own order, so the 48 samples then chosen are others of the same episodes, not the committed ones.
# Usage: scripts/build_pytools_eval.sh [--collect] [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
collect=0
if [ "${1:-}" = "--collect" ]; then collect=1; shift; fi
work=${1:-runs/pytools-eval-build}
lwm=.venv/bin/lwm
NAMES="key-value-store set list calendar text-calendar codecs config-file functools ipaddress pygments.lexers re
  semantic_version statistics struct xml.sax.saxutils $(echo mpmath-{1..10})"
HELD="builtins calendar codecs configparser functools ipaddress mpmath pygments re semantic_version statistics struct
  xml"
rm -rf "$work/split" "$work/eval"
if [ $collect = 1 ]; then
  # shellcheck disable=SC2046  # one --part per word
  $lwm collect --preset pytools $(for g in $NAMES; do echo --part "mcp:$g"; done) --workers 2 --out "$work/collect"
  corpus="$work/collect"
else
  mkdir -p "$work"
  xz -dc data/pytools/trajectories.jsonl.xz > "$work/corpus.jsonl"
  corpus="$work/corpus.jsonl"
fi
# shellcheck disable=SC2046  # one --hold per word
$lwm data split "$corpus" --by source $(for p in $HELD; do echo --hold "mcp:pytools-$p"; done) --out "$work/split"
$lwm bench export "$work/split/heldout.jsonl" --compact --per-domain 48 --out "$work/eval"
mkdir -p data/pytools-lopo
xz -9 -T1 -c "$work/eval/mcp_test.jsonl" > data/pytools-lopo/mcp_test.jsonl.xz
ls -la data/pytools-lopo
