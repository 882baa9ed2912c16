"""The one clamp for a step, layer or head index that arrives from outside (a slider, a link, a
field, a stale event): the nearest index that exists, never an IndexError.

A leaf module (it imports nothing), so viz/ and ui/ both clamp with the same rule.
"""
from __future__ import annotations


def clamp_index(i, n: int, *, low: int = 0, default: int | None = None) -> int:
    """`i` as an index into `n` things: int(i) moved to the nearest of low .. n - 1 (`low` when n
    is 0). `default`: used, clamped alike, when `i` is no number (None, "", "all"); without it that
    raises as int() does. `low=-1` lets -1 stand for "before the first" (the prompt alone)."""
    try:
        k = int(i)
    except (TypeError, ValueError):
        if default is None:
            raise
        k = default
    return max(low, min(k, n - 1))


__all__ = ["clamp_index"]
