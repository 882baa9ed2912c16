"""Statistics for tests that check distributions (no scipy on these machines)."""
from __future__ import annotations

import math

import numpy as np


def chi2_sf(x: float, dof: int) -> float:
    """P(chi-square with dof degrees of freedom > x), from the series of the lower incomplete gamma."""
    a, h = dof / 2.0, x / 2.0
    if h <= 0:
        return 1.0
    term = total = 1.0 / a
    n = 0
    while term > 1e-15 * total:
        n += 1
        term *= h / (a + n)
        total += term
    return max(0.0, 1.0 - math.exp(a * math.log(h) - h - math.lgamma(a)) * total)


def chi2_p_value(counts: np.ndarray, probs: np.ndarray) -> float:
    """Pearson's goodness-of-fit p-value of `counts` against the distribution `probs` (cells with
    probability 0 must have no counts: the caller checks that)."""
    counts, probs = np.asarray(counts, np.float64), np.asarray(probs, np.float64)
    keep = probs > 0
    expected = counts.sum() * probs[keep] / probs[keep].sum()
    x = float(((counts[keep] - expected) ** 2 / expected).sum())
    return chi2_sf(x, int(keep.sum()) - 1)
