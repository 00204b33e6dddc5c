#!/usr/bin/env bash
# Installs what lwm needs on a fresh Debian/Ubuntu machine: the system packages (with apt, where
# missing) and a virtual environment in .venv with lwm and its dev extras. Safe to re-run: it skips
# work already done (a stamp keyed on pyproject.toml), and pip reuses the llama-cpp-python wheel it
# built before from its cache.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for pkg_cmd in "build-essential:g++" "cmake:cmake" "python3-venv:" "git:git" "tmux:tmux" "bubblewrap:bwrap" \
               "nodejs:node" "npm:npm"; do
  pkg=${pkg_cmd%%:*}; cmd=${pkg_cmd#*:}
  if [ -n "$cmd" ]; then command -v "$cmd" >/dev/null 2>&1 || need+=("$pkg")
  else python3 -c "import venv, ensurepip" >/dev/null 2>&1 || need+=("$pkg"); fi
done
# Real document collections for the search environment, and the browser for the web environment
# (checked with dpkg: they are files, or a command whose name differs between releases). Never Debian's
# nodejs-doc: it conflicts with NodeSource's nodejs, and apt would remove the machine's node to install it.
for pkg in python3-doc manpages manpages-dev dict-foldoc dict-jargon chromium libseccomp2 \
           xvfb dbus-x11 at-spi2-core python3-pyatspi mousepad galculator xdotool \
           git-doc sqlite3-doc bash-doc debian-reference-en sqlite3 jq bc \
           python-flask-doc python-jinja2-doc python-click-doc python-werkzeug-doc python-requests-doc \
           python-attr-doc python-pytest-doc python-pygments-doc python-markdown-doc apache2-doc \
           gtk-3-examples gucharmap gnumeric abiword dc units lua5.4 ruby \
           sphinx-doc cmake-doc python-babel-doc python-setuptools-doc python-itsdangerous-doc python-webob-doc \
           python-tornado-doc python-cryptography-doc python-scrapy-doc python-django-doc python-sqlalchemy-doc \
           python-lxml-doc vim-doc zsh-doc; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing system packages: ${need[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=.venv/.lwm-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing lwm into .venv (the first build of llama-cpp-python takes several minutes)"
  .venv/bin/python -m pip install -q --upgrade pip
  # A portable llama.cpp build: no -march=native, no multimodal parts we do not use.
  CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF}" \
    .venv/bin/python -m pip install -q -e ".[dev]"
  echo "$want" > "$stamp"
fi

# Real MCP servers from npm, pinned by servers/mcp/package-lock.json.
lock=servers/mcp/node_modules/.package-lock.json
if [ ! -f "$lock" ] || [ servers/mcp/package-lock.json -nt "$lock" ]; then
  echo "setup: installing the npm MCP servers"
  npm ci --prefix servers/mcp --no-audit --no-fund --silent
fi

# MCP servers from PyPI that need an older mcp SDK than lwm's, in their own environment.
stamp=servers/pypi/.venv/.lwm-installed
want=$(sha256sum servers/pypi/requirements.txt | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing the PyPI MCP servers"
  "$PY" -m venv servers/pypi/.venv
  servers/pypi/.venv/bin/python -m pip install -q -r servers/pypi/requirements.txt
  echo "$want" > "$stamp"
fi

# Source distributions of real libraries for the SWE domain (corpus-v2), pinned in servers/swe/projects.txt.
mkdir -p servers/swe/sdists
if [ "$(grep -c '==' servers/swe/projects.txt)" -ne "$(ls servers/swe/sdists | grep -c 'tar.gz$')" ]; then
  echo "setup: downloading the SWE projects' source distributions"
  .venv/bin/python -m pip download -q --no-deps --no-binary :all: -d servers/swe/sdists -r servers/swe/projects.txt
fi
