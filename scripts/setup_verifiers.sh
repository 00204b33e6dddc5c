#!/usr/bin/env bash
# verifiers' own virtual environment, .venv-verifiers, with lwm's verifiers taskset (integrations/verifiers)
# installed: verifiers 0.4 pins mcp==2.0.0 and older openai/datasets than lwm's venv holds, so the two live
# apart and talk over loopback (`lwm serve openenv`). Safe to re-run: a stamp keyed on the package's
# pyproject.toml and offline.py skips a venv already set up.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
stamp=.venv-verifiers/.lwm-installed
hash=$(cat integrations/verifiers/pyproject.toml integrations/verifiers/lwm_tasks/offline.py | sha256sum | cut -d' ' -f1)
[ "$(cat "$stamp" 2>/dev/null || true)" = "$hash" ] && exit 0
echo "setup: installing verifiers and lwm's taskset into .venv-verifiers (about a minute)"
[ -x .venv-verifiers/bin/python ] || "$PY" -m venv .venv-verifiers
.venv-verifiers/bin/python -m pip install -q --upgrade pip
.venv-verifiers/bin/python -m pip install -q -e integrations/verifiers
# the wheels of the script verifiers runs for each episode, fetched now: a run then needs no network
.venv-verifiers/bin/python -m lwm_tasks.offline
echo "$hash" > "$stamp"
