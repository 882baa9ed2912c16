"""Numbers in words, the same on every panel: counts ("1 token", "2,048 tokens") and percentages.

Plain text out (no HTML), so a caller escapes or embeds it as it would any other text.
"""
from __future__ import annotations


def count(n: int, word: str, plural: str | None = None) -> str:
    """'1 token', '0 tokens', '2,048 tokens'; `plural` for words that add more than an s ('passes')."""
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def tokens(n: int) -> str:
    """'1 token', '2,048 tokens'."""
    return count(n, "token")


def pct(p: float) -> str:
    """A probability as a readable percentage, with the digits its size needs: 0.873 -> '87%',
    0.023 -> '2.3%', 4e-6 -> '0.0004%'."""
    p = float(p) * 100
    if p >= 10:
        return f"{p:.0f}%"
    if p >= 1:
        return f"{p:.1f}%"
    if p >= 0.01:
        return f"{p:.2f}%"
    if p <= 0:
        return "0%"
    return f"{p:.1g}%" if p >= 1e-4 else "<0.0001%"


def pct_tenths(f: float) -> str:
    """A share to a tenth of a percent: '12.3%', '<0.1%' below that (never a share that rounds to
    0 but is not), '0.0%' for none, '–' when there is no share (NaN)."""
    if f != f:
        return "–"
    return f"{f:.1%}" if f >= 0.001 or f == 0 else "<0.1%"


__all__ = ["count", "tokens", "pct", "pct_tenths"]
