#!/usr/bin/env bash
# Set everything up (test tools and Chromium included), check style with ruff, then run the whole test suite:
# the unit tests on two workers (pytest-xdist), then the embedded model's and the browser tests in order, in one
# process (two apps and two browsers at once overload a 2-core machine: no faster, and pages fall behind).
# With arguments, one pytest run of exactly those (e.g. `bash scripts/test.sh tests/unit/test_sampling.py -x`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --dev
.venv/bin/ruff check --quiet . || { echo "test: ruff found the defects above (pyproject.toml [tool.ruff]); fix them first" >&2; exit 1; }
PYTEST=(.venv/bin/python -m pytest -q -rs)
if [ $# -gt 0 ]; then
  exec "${PYTEST[@]}" "$@"
fi
unit=0; rest=0
"${PYTEST[@]}" -n 2 -m "not browser and not integration" || unit=$?
"${PYTEST[@]}" -m "browser or integration" || rest=$?  # (run even after a unit test failed: every result at once)
[ "$unit" -eq 0 ] || exit "$unit"
exit "$rest"
