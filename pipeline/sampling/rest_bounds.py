"""The range each number must lie in, for a step saved with neither its full logits nor a summary of the rest of
the vocabulary (a trace written before pipeline.sampling.rest).

What such a step holds: its top N candidates' logits, the full vocabulary's logsumexp and (from the trace) the
vocabulary's size. So the rest's sum of exp(x) is known, and each rest logit is at most the smallest candidate's.
At another temperature t the rest's sum of exp(x / t) lies between its values for the two extreme spreads of
that sum (Jensen's inequality: all alike, or piled up as high as they can be). Each stage's numbers follow as
ranges: top-k within the candidates is exact, a nucleus that may reach the rest keeps between what the two
ends of the sum give. The entropy of the distribution sampled from is given only where it is exact (None).
assets/viewer_sampling.js computes the same from viz.viewer.sampling's "range" tables.

numpy only, no torch. Without a repetition penalty only (with one, the rest's sum is not known).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pipeline.trace.records import StepRecord
from pipeline.sampling.rest import EPS
from pipeline.sampling.stages import LOG2E


def rest_sums(step: StepRecord, vocab_size: int, t: float) -> tuple[float, float] | None:
    """(log lo, log hi): the rest's sum of exp(x / t) lies between them; None where the step cannot say."""
    top = np.asarray(step.top_logits, np.float64)
    n, lse = int(vocab_size) - top.size, float(step.logsumexp)
    if n <= 0 or not top.size or not math.isfinite(lse) or not np.all(np.isfinite(top)) or top.max() > lse + 1e-3:
        return None
    low = float(top.min())
    share = 1.0 - float(np.exp(top - lse).sum())  # the rest's probability at temperature 1
    if share <= 0:
        return -math.inf, -math.inf
    spread = math.log(n) + (lse + math.log(share / n)) / t  # n alike, each at the mean
    f = min(n, int(share * math.exp(min(lse - low, 700.0))))  # as many as can be at `low`, one with what is left
    left = share - f * math.exp(low - lse)
    piled = (math.log(f) + low / t) if f else -math.inf
    if left > 0:
        piled = np.logaddexp(piled, (lse + math.log(left)) / t)
    return min(spread, float(piled)), max(spread, float(piled))


@dataclass(frozen=True)
class Range:
    """A step's distribution under some settings, as the ranges it lies in."""

    lo: np.ndarray  # (N,) each candidate's probability in the distribution sampled from is at least this
    hi: np.ndarray  # (N,) and at most this
    kept: np.ndarray  # (N,) bool: it may survive every stage
    stages: tuple[tuple[str, float, tuple[int, int], tuple[float, float]], ...]  # (name, param, kept range, mass range)
    entropy: tuple[float, float] | None  # bits; None where it is not known


def _first(S: np.ndarray, target: float, lim: int) -> int:
    """Candidates the smallest prefix holding `target` takes (0: none of the first `lim` reach it)."""
    i = int(np.searchsorted(S[:lim], target, side="left"))
    return i + 1 if i < lim else 0


def _nucleus(S, e_last, z, rest, p):
    """Top-p on alive sums z = (lo, hi): ((kept lo, kept hi), (z kept lo, z kept hi), always kept, maybe kept)."""
    N, tau = S.size, p - EPS
    lim = N if rest else z[2]
    ends = []
    for zz, extra in ((z[0], 0.0), (z[1], e_last)):  # past the candidates: the cut's token is one at most the last's size
        n = _first(S, tau * zz, lim)
        ends.append((n, S[n - 1]) if n else ((0, tau * zz + extra) if rest else (lim, S[lim - 1])))
    (na, A), (nb, B) = ends
    count = (na or N + 1, nb or z[3])
    return count, (A, B), na or N, nb or N


def _min_p(e, S, z, rest, always, maybe, p):
    """Min-p on alive sums z = (lo, hi, count lo, count hi), `always` / `maybe` candidates alive: the candidates at least p
    times the first's pass (e sorted, e[0] = 1). One failing: every rest logit is at most its, so the rest fails too. All
    passing with the rest alive: the rest's tokens may pass or not. -> (count range, kept sums, new z, always, maybe, rest)."""
    n = int(np.count_nonzero(e >= p))
    if n < S.size or not (rest and z[3] > S.size):
        lo, hi = min(always, n), min(maybe, n)
        return (lo, hi), (S[lo - 1], S[hi - 1]), (S[lo - 1], S[hi - 1], lo, hi), lo, hi, False
    return (always, int(z[3])), (S[always - 1], z[1]), (S[always - 1], z[1], always, z[3]), always, maybe, True


def ranged(step: StepRecord, vocab_size: int, *, temperature: float, top_k: int = 0, top_p: float = 1.0,
           min_p: float = 0.0) -> Range | None:
    """The stages (temperature, top-k, top-p, min-p) as ranges; None where the step cannot say (see the module doc)."""
    x = np.asarray(step.top_logits, np.float32)
    N, V = x.size, int(vocab_size)
    if temperature == 0:  # greedy: exact
        one = (np.arange(N) == 0).astype(np.float64)
        p0 = math.exp(float(x[0]) - float(step.logsumexp))
        return Range(one, one, one > 0, (("temperature", 0.0, (1, 1), (p0, p0)),), (0.0, 0.0))
    sums = rest_sums(step, V, temperature)
    if sums is None:
        return None
    q = (x / np.float32(temperature)).astype(np.float64)
    e = np.exp(q - q[0])
    S = np.cumsum(e)  # S[j]: the first j + 1 candidates
    r = (math.exp(sums[0] - q[0]), math.exp(sums[1] - q[0]))
    stages = [("temperature", float(temperature), (V, V), (1.0, 1.0))]
    z, rest = (S[-1] + r[0], S[-1] + r[1], V, V), True  # alive: sums lo, hi; count lo, hi
    Z, k = z, int(round(top_k))
    if k >= V:
        stages.append(("top_k", float(k), (V, V), (1.0, 1.0)))
    elif k > 0:
        nk = k + int(np.count_nonzero(q[k:] >= q[k - 1])) if k <= N else V
        if nk < N:  # within the candidates: exact
            z, rest = (S[nk - 1], S[nk - 1], nk, nk), False
        else:  # the rest's largest k - N (at least a share of its sum, at most k - N of the last candidate's size)
            j = max(k - N, 0)
            z = (S[-1] + r[0] * j / (V - N), S[-1] + min(r[1], (j or V - N) * e[-1]), max(k, N), k if k > N else V)
        stages.append(("top_k", float(k), (z[2], z[3]), (z[0] / Z[1], min(1.0, z[1] / Z[0]))))
    always = maybe = min(z[3], N)
    if top_p < 1.0:
        count, kz, always, maybe = _nucleus(S, e[-1], z, rest, top_p)
        stages.append(("top_p", float(top_p), count, (max(top_p - EPS, kz[0] / z[1]), min(1.0, kz[1] / z[0]))))  # (it keeps p at least)
        z = (kz[0], kz[1], *count)
    if min_p > 0:
        count, kz, z2, always, maybe, rest = _min_p(e, S, z, rest, always, maybe, min_p)
        stages.append(("min_p", float(min_p), count, (kz[0] / z[1], min(1.0, kz[1] / z[0]))))
        z = z2
    i = np.arange(N)
    lo = np.where(i < always, e / z[1], 0.0)
    hi = np.where(i < maybe, e / np.maximum(z[0], S), 0.0)
    return Range(lo, hi, i < maybe, tuple(stages), _entropy(step, q, e, z, rest, (temperature, k, top_p, min_p), V))


def _entropy(step, q, e, z, rest, settings, V) -> tuple[float, float] | None:
    """Exact where the kept tokens are known candidates (or the settings are the raw distribution's)."""
    t, k, p, mp = settings
    if t == 1.0 and (k == 0 or k >= V) and p >= 1.0 and not mp > 0:
        return step.entropy, step.entropy
    if rest or z[0] != z[1] or z[2] != z[3]:
        return None
    n = int(z[2])
    H = max(0.0, (math.log(z[0]) - float(e[:n] @ (q[:n] - q[0])) / z[0]) * LOG2E)
    return H, H
