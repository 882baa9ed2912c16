"""Numbers in words, the same on every panel: counts ("1 token", "2,048 tokens") and percentages, written by
viz.text (the one formatter of each kind, equal to assets/text.js's); these are the panels' short names for them
(and a step's phase, "prefill" or "decode", in the language spoken).

Plain text out (no HTML), so a caller escapes or embeds it as it would any other text.
"""
from __future__ import annotations

from viz import text


def tokens(n: int) -> str:
    """'1 token', '2,048 tokens' (another unit: viz.text.count(n, "byte"), its words in the catalogue's `unit` area)."""
    return text.count(n, "token")


def phase(name: str) -> str:
    """A step's phase in the language spoken: 'prefill' or 'decode' (another name as it is)."""
    return text.t("fmt.prefill") if name == "prefill" else text.t("fmt.decode") if name == "decode" else name


def pct(p: float) -> str:
    """A probability as a readable percentage, with the digits its size needs: 0.873 -> '87%',
    0.023 -> '2.3%', 4e-6 -> '0.0004%' (viz.text.pct with digits=None)."""
    return text.pct(p, None)


def pct_tenths(f: float) -> str:
    """A share to a tenth of a percent: '12.3%', '<0.1%' below that (never a share that rounds to
    0 but is not), '0.0%' for none, '–' when there is no share (NaN)."""
    return text.pct(f, 1, floor=True)


__all__ = ["tokens", "phase", "pct", "pct_tenths"]
