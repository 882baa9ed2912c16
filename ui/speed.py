"""Speculative decoding's speed-up, measured: the speculative run against plain decoding of the same prompt.

    speed = speed_against_plain(lm, trace)   # {"speculative_tok_s", "plain_tok_s"}
"""
from __future__ import annotations

from dataclasses import replace

from pipeline.trace.records import Trace


def speed_against_plain(lm, trace: Trace) -> dict:
    """Tokens per second of the speculative run (its rounds' own wall time) and of plain decoding of
    the same prompt and settings for as many tokens (its steps' own wall time), both traced alike."""
    from pipeline.generate import start

    n = len(trace.steps)
    plain = list(start(lm, trace.prompt.text, replace(trace.settings, max_new_tokens=n), ignore_eos=True))
    spec_s = sum(r.ms for r in trace.rounds) / 1000
    plain_s = sum(st.ms for st in plain) / 1000
    return {"speculative_tok_s": n / spec_s if spec_s else 0.0, "plain_tok_s": len(plain) / plain_s if plain_s else 0.0}
