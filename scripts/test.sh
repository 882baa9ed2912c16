#!/usr/bin/env bash
# Set everything up (test tools and Chromium included), check style with ruff, then run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --dev
.venv/bin/ruff check --quiet . || { echo "test: ruff found the defects above (pyproject.toml [tool.ruff]); fix them first" >&2; exit 1; }
exec .venv/bin/python -m pytest -q -rs "$@"
