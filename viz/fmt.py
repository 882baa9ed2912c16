"""Numbers in words, the same on every panel: counts ("1 token", "2,048 tokens") and percentages, written by
viz.text (the one formatter of each kind, equal to assets/text.js's); these are the panels' short names for them.

Plain text out (no HTML), so a caller escapes or embeds it as it would any other text.
"""
from __future__ import annotations

from . import text


def count(n: int, word: str, plural: str | None = None) -> str:
    """'1 byte', '0 bytes', '2,048 bytes'; `plural` for words that add more than an s ('passes'). (Tokens: tokens(),
    from the catalogue.)"""
    return f"{text.thousands(n)} {word if n == 1 else plural or word + 's'}"


def tokens(n: int) -> str:
    """'1 token', '2,048 tokens'."""
    return text.count(n, "token")


def pct(p: float) -> str:
    """A probability as a readable percentage, with the digits its size needs: 0.873 -> '87%',
    0.023 -> '2.3%', 4e-6 -> '0.0004%' (viz.text.pct with digits=None)."""
    return text.pct(p, None)


def pct_tenths(f: float) -> str:
    """A share to a tenth of a percent: '12.3%', '<0.1%' below that (never a share that rounds to
    0 but is not), '0.0%' for none, '–' when there is no share (NaN)."""
    return text.pct(f, 1, floor=True)


__all__ = ["count", "tokens", "pct", "pct_tenths"]
