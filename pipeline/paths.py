"""Where the project keeps converted weights and tokenizer files (no heavy imports here)."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """$LLM_VIZ_CACHE, else $XDG_CACHE_HOME/llm-pipeline-viz (default ~/.cache/llm-pipeline-viz)."""
    if os.environ.get("LLM_VIZ_CACHE"):
        return Path(os.environ["LLM_VIZ_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "llm-pipeline-viz"
