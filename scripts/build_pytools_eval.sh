#!/usr/bin/env bash
# Rebuilds data/pytools-lopo: the leave-packages-out eval set of the tool corpus (issue 60). Collects only the
# `pytools` preset's groups of the 13 held-out packages (the very episodes the whole preset runs for them: 100
# trajectories, ~4 min on 2 cores with 2 workers), holds those packages out by source (the seeded split
# `lwm data split runs/pytools --by source --heldout 0.2 --seed 0` chose them from the whole collection's 63),
# exports 48 samples as compact AgentWorldBench rows and xz-compresses them.
# Needs the sandbox (`lwm setup`) and the dev extras (mpmath, pygments, semantic_version). Usage:
# scripts/build_pytools_eval.sh [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-runs/pytools-eval-build}
lwm=.venv/bin/lwm
GROUPS="key-value-store set list calendar text-calendar codecs config-file functools ipaddress pygments.lexers re
  semantic_version statistics struct xml.sax.saxutils $(echo mpmath-{1..10})"
HELD="builtins calendar codecs configparser functools ipaddress mpmath pygments re semantic_version statistics struct
  xml"
# shellcheck disable=SC2046  # one --part / --hold per word
$lwm collect --preset pytools $(for g in $GROUPS; do echo --part "mcp:$g"; done) --workers 2 --out "$work/collect"
# shellcheck disable=SC2046
$lwm data split "$work/collect" --by source $(for p in $HELD; do echo --hold "mcp:pytools-$p"; done) --out "$work/split"
rm -rf "$work/eval"
$lwm bench export "$work/split/heldout.jsonl" --compact --per-domain 48 --out "$work/eval"
mkdir -p data/pytools-lopo
xz -9 -T1 -c "$work/eval/mcp_test.jsonl" > data/pytools-lopo/mcp_test.jsonl.xz
ls -la data/pytools-lopo
