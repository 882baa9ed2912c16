#!/usr/bin/env bash
# Set everything up, then start the app on http://127.0.0.1:7860 (arguments go to app.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python app.py "$@"
