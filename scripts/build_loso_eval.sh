#!/usr/bin/env bash
# Rebuilds data/loso: the leave-sources-out eval set (issue 44). Collects only corpus-v2's 20 held-out sources
# (the very episodes the whole preset would run for them: 170 trajectories, ~5 min on 2 cores with 2 workers),
# holds them out by source (the split the docs/training.md tables use), exports 32 samples per domain as
# compact AgentWorldBench rows, and xz-compresses them (lwm bench reads *_test.jsonl.xz as they are).
# Needs the real environments: `lwm setup` first. Usage: scripts/build_loso_eval.sh [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-runs/loso-build}
lwm=.venv/bin/lwm
PARTS="mcp:sequential-thinking mcp:sqlite os:abiword os:gnumeric search:attrs-docs search:click-docs
  search:flask-docs search:requests-docs swe:attrs-24.2.0 swe:tabulate-0.9.0 swe:wcwidth-0.2.13 terminal:ed
  terminal:perl terminal:sqlite3 terminal:tclsh web:pytest-docs web:git-docs web:apache-httpd-docs
  web:bash-manual web:sqlite-docs"
HELD="mcp:sequential-thinking-server mcp:sqlite os:abiword os:gnumeric search:attrs-docs search:click-docs
  search:flask-docs search:requests-docs swe:attrs-24.2.0 swe:tabulate-0.9.0 swe:wcwidth-0.2.13 terminal:ed
  terminal:perl terminal:sqlite3 terminal:tclsh web:docs.pytest.org web:git-scm.com web:httpd.apache.org
  web:www.gnu.org web:www.sqlite.org"
# shellcheck disable=SC2046  # one --part / --hold per word
$lwm collect --preset corpus-v2 $(for p in $PARTS; do echo --part "$p"; done) --workers 2 --out "$work/collect"
# shellcheck disable=SC2046
$lwm data split "$work/collect" --by source $(for s in $HELD; do echo --hold "$s"; done) --out "$work/split"
rm -rf "$work/eval"
$lwm bench export "$work/split/heldout.jsonl" --compact --per-domain 32 --out "$work/eval"
mkdir -p data/loso
for f in "$work"/eval/*_test.jsonl; do xz -9 -T1 -c "$f" > "data/loso/$(basename "$f").xz"; done
ls -la data/loso
