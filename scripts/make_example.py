"""Regenerate assets/example_trace.json.gz: the trace the page shows before the model has loaded.

    .venv/bin/python scripts/make_example.py
"""
from __future__ import annotations

import gzip
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.trace import files as trace_io  # noqa: E402
from pipeline.generate import run_trace  # noqa: E402
from pipeline.inside.analyses import with_inside  # noqa: E402
from pipeline.loading import load_model  # noqa: E402
from pipeline.trace.records import Settings  # noqa: E402


def main() -> None:
    lm = load_model(None)
    trace = run_trace(lm, "Why is the sky blue?", Settings(temperature=0.7, top_p=0.9, seed=0, max_new_tokens=40))
    trace = with_inside(lm, trace)  # the logit lens of every step, parameter counts, this machine's limits
    out = ROOT / "assets" / "example_trace.json.gz"
    out.write_bytes(gzip.compress(trace_io.dumps(trace).encode("utf-8"), 9, mtime=0))
    print(f"{out}: {len(trace.steps)} steps, {out.stat().st_size / 1e6:.1f} MB, text: {trace.text!r}")


if __name__ == "__main__":
    main()
