"""Sampling as a list of small pure logit transforms, each stage's effect recorded.

numpy only (no torch), so the app can reshape a captured step's distribution when a
slider moves, with exactly the code that chose the token.

Order and definitions follow transformers: repetition penalty (a logits processor) first,
then temperature, top-k, top-p, min-p. Top-p keeps the smallest set of most likely tokens whose
cumulative probability reaches p; min-p keeps the tokens whose probability is at least p times the
most likely one's. Temperature 0 means greedy (argmax). Probabilities are
always normalised over the full vocabulary.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from pipeline.errors import SettingsError  # the stages raise it

NEG_INF = -np.inf
LOG2E = 1.0 / np.log(2.0)


def _shifted_exp(logits: np.ndarray) -> tuple[np.ndarray, np.float64]:
    """exp(x - max x) in float64, and max x: the one exponentiation softmax and logsumexp share.

    Worked in place in one fresh array (the same ufuncs on the same values as `np.exp(x - m)`):
    a decode step runs right after a forward pass has swept the caches, and every extra
    49,152-float64 temporary is another 384 KiB written to memory."""
    e = np.array(logits, dtype=np.float64)  # (vocab,) our own copy, never the caller's array
    m = np.max(e)
    e -= m
    np.exp(e, out=e)
    return e, m


def softmax(logits: np.ndarray) -> np.ndarray:
    """float64 softmax over the full vocabulary; -inf entries get probability 0."""
    e, _ = _shifted_exp(logits)
    e /= e.sum()
    return e


def logsumexp(logits: np.ndarray) -> float:
    e, m = _shifted_exp(logits)
    return float(m + np.log(e.sum()))


def _softmax_alive(x: np.ndarray, alive: np.ndarray, n_alive: int) -> np.ndarray:
    """`softmax(x)` given `alive = isfinite(x)` and its count. When one entry survives and every
    other is -inf (greedy, top-k 1, a sharp top-p) softmax is exactly one-hot: exp(0) = 1, the sum
    is 1, and 1 / 1 = 1; that is written directly instead of exponentiating the vocabulary."""
    if n_alive == 1:
        i = int(np.argmax(alive))
        if np.max(x) == x[i]:  # no +inf or NaN beside it (either would make softmax NaN)
            p = np.zeros(x.shape, np.float64)  # (vocab,)
            p[i] = 1.0
            return p
    return softmax(x)


def entropy_bits(probs: np.ndarray) -> float:
    pos = probs > 0
    p = probs if pos.all() else probs[pos]  # no copy when nothing is 0 (the same values either way)
    plogp = np.log(p)
    plogp *= p  # p * log(p), in the log's array
    return float(-plogp.sum() * LOG2E)


def _kept_mass(probs_in: np.ndarray, alive: np.ndarray, n_alive: int) -> float:
    """`float(probs_in[alive].sum())`, bit for bit, without the gather when all or one survive
    (the same values summed in the same order: the full array, or the one value)."""
    if n_alive == alive.size:
        return float(probs_in.sum())
    if n_alive == 1:
        return float(probs_in[int(np.argmax(alive))])
    return float(probs_in[alive].sum())


def _raw_kept_mass(e: np.ndarray, s: np.float64, alive: np.ndarray, n_alive: int) -> float:
    """`_kept_mass(e / s, ...)` for the raw softmax e / s, dividing only what is summed: the raw
    distribution is not kept, so greedy, top-k and top-p never divide the whole vocabulary.
    (e / s)[alive] and e[alive] / s are the same quotients in the same order."""
    if n_alive == alive.size:
        e /= s  # e is apply_stages' own and is not used again
        return float(e.sum())
    if n_alive == 1:
        return float(e[int(np.argmax(alive))] / s)
    return float((e[alive] / s).sum())


BLOCK = 128  # elements per block when a few largest values are looked for by block maxima
MIN_BLOCK = 8  # smaller blocks save nothing over partitioning the whole array


def top_candidates(x: np.ndarray, n: int) -> np.ndarray | None:
    """Ids of a small set of entries of the 1-D array `x` that holds every one of its `n` largest
    (ascending ids); None where the shortcut does not apply (a small array, too few blocks, a NaN).

    Why: partitioning all 49,152 logits for the top 100 is a real share of a decode step. The maxima of blocks
    of 128 are n distinct entries >= their n-th largest `t`, so the n largest values of `x` are all
    >= t, and `x >= t` keeps them plus the few (typically a hundred or two) that tie or beat t."""
    b = min(BLOCK, x.size // (2 * max(n, 1)))  # at least 2n blocks, so that x >= t keeps few
    if x.ndim != 1 or b < MIN_BLOCK:
        return None
    nb = x.size // b
    bmax = x[: nb * b].reshape(nb, b).max(axis=1)  # (nb,)
    if x.size > nb * b:
        bmax = np.append(bmax, x[nb * b :].max())
    if np.isnan(bmax).any():  # NaN orders differently in a partition: keep the plain path
        return None
    t = np.partition(bmax, bmax.size - n)[bmax.size - n]  # the n-th largest block maximum
    return np.flatnonzero(x >= t)


def kth_largest(x: np.ndarray, k: int) -> np.float32:
    """`np.partition(x, x.size - k)[x.size - k]` (the k-th largest value of a 1-D array), found
    among `top_candidates` when it applies: the same value, since they hold the k largest."""
    cand = top_candidates(x, k)
    if cand is None:
        return np.partition(x, x.size - k)[x.size - k]
    v = x[cand]
    return np.partition(v, v.size - k)[v.size - k]


@dataclass(frozen=True)
class RepetitionPenalty:
    """CTRL-style: logits of tokens already in the context are divided (if > 0) or multiplied (if < 0)."""

    penalty: float
    context_ids: tuple[int, ...] = ()
    name = "repetition_penalty"

    def __post_init__(self):
        if not (self.penalty > 0) or not np.isfinite(self.penalty):
            raise SettingsError(f"repetition penalty must be a positive number (1.0 turns it off), not {self.penalty}",
                                key="error.repetition_penalty", value=self.penalty)

    @property
    def param(self) -> float:
        return self.penalty

    def __call__(self, logits: np.ndarray) -> np.ndarray:
        out = np.array(logits, dtype=np.float32, copy=True)
        if not self.context_ids:
            return out
        ids = np.unique(np.asarray(self.context_ids, dtype=np.int64))
        sel = out[ids]
        out[ids] = np.where(sel < 0, sel * self.penalty, sel / self.penalty)
        return out


@dataclass(frozen=True)
class Temperature:
    temperature: float
    name = "temperature"

    def __post_init__(self):
        if not (self.temperature >= 0) or not np.isfinite(self.temperature):
            raise SettingsError(f"temperature must be 0 (greedy) or more, not {self.temperature}", key="error.temperature", value=self.temperature)

    @property
    def param(self) -> float:
        return self.temperature

    def __call__(self, logits: np.ndarray) -> np.ndarray:
        x = np.asarray(logits, dtype=np.float32)
        if self.temperature == 0:  # greedy: only the argmax survives
            out = np.full_like(x, NEG_INF)
            i = int(np.argmax(x))
            out[i] = x[i]
            return out
        return x / np.float32(self.temperature)


@dataclass(frozen=True)
class TopK:
    k: int
    name = "top_k"

    def __post_init__(self):
        if int(self.k) != self.k or self.k < 0:
            raise SettingsError(f"top-k must be a whole number, 0 (off) or more, not {self.k}", key="error.top_k", value=self.k)

    @property
    def param(self) -> float:
        return float(self.k)

    def __call__(self, logits: np.ndarray) -> np.ndarray:
        x = np.asarray(logits, dtype=np.float32)
        if self.k == 0 or self.k >= x.size:
            return x.copy()
        kth = kth_largest(x, self.k)
        return np.where(x < kth, np.float32(NEG_INF), x)  # ties with the k-th are kept, as in transformers


@dataclass(frozen=True)
class TopP:
    p: float
    name = "top_p"

    def __post_init__(self):
        if not (0 < self.p <= 1):
            raise SettingsError(f"top-p must be in (0, 1] (1.0 turns it off), not {self.p}", key="error.top_p", value=self.p)

    @property
    def param(self) -> float:
        return self.p

    def __call__(self, logits: np.ndarray) -> np.ndarray:
        x = np.asarray(logits, dtype=np.float32)
        if self.p >= 1.0:
            return x.copy()
        probs = softmax(x)
        # Sort only the head of the distribution when it already holds mass p (it nearly always does).
        n = x.size
        for head in (min(n, 1024), n):
            idx = np.argpartition(-probs, head - 1)[:head] if head < n else np.arange(n)
            idx = idx[np.argsort(-probs[idx], kind="stable")]
            cum = np.cumsum(probs[idx])
            if cum[-1] >= self.p or head == n:
                break
        # smallest prefix whose cumulative probability reaches p (at least one token)
        keep_n = int(np.searchsorted(cum, self.p - 1e-12, side="left")) + 1
        keep_n = min(max(keep_n, 1), idx.size)
        out = np.full_like(x, NEG_INF)
        kept = idx[:keep_n]
        out[kept] = x[kept]
        return out


@dataclass(frozen=True)
class MinP:
    """Keep the tokens whose probability is at least p times the most likely token's (transformers' MinPLogitsWarper:
    softmax, threshold p x max, the rest set to -inf; the most likely token always stays)."""

    p: float
    name = "min_p"

    def __post_init__(self):
        if not (0 <= self.p <= 1):
            raise SettingsError(f"min-p must be in [0, 1] (0 turns it off), not {self.p}", key="error.min_p", value=self.p)

    @property
    def param(self) -> float:
        return self.p

    def __call__(self, logits: np.ndarray) -> np.ndarray:
        x = np.asarray(logits, dtype=np.float32)
        if self.p <= 0:
            return x.copy()
        probs = softmax(x)
        keep = probs >= self.p * probs.max()
        return np.where(keep, x, np.float32(NEG_INF))


def build_stages(
    *, temperature: float, top_k: int = 0, top_p: float = 1.0, min_p: float = 0.0, repetition_penalty: float = 1.0,
    context_ids: Sequence[int] = ()
) -> list:
    """The list of transforms for these settings; validates every argument."""
    stages: list = []
    if repetition_penalty != 1.0 or not (repetition_penalty > 0):
        stages.append(RepetitionPenalty(float(repetition_penalty), tuple(int(i) for i in context_ids)))
    stages.append(Temperature(float(temperature)))
    tk, tp, mp = TopK(int(top_k) if float(top_k).is_integer() else top_k), TopP(float(top_p)), MinP(float(min_p))
    if temperature > 0:  # after greedy, top-k / top-p / min-p cannot change anything
        if tk.k:
            stages.append(tk)
        if tp.p < 1.0:
            stages.append(tp)
        if mp.p > 0:
            stages.append(mp)
    return stages


@dataclass(frozen=True)
class SampleResult:
    final_logits: np.ndarray  # (vocab,) after every stage (-inf where removed)
    final_probs: np.ndarray  # (vocab,) float64, the distribution sampled from
    stage_probs: tuple[np.ndarray, ...]  # (vocab,) distribution after each stage
    stage_kept: tuple[int, ...]
    stage_mass: tuple[float, ...]  # mass of the kept tokens in the distribution entering the stage
    logits: np.ndarray | None = None  # the raw logits the stages started from (the array passed in)
    logsumexp: float | None = None  # logsumexp(logits), computed with softmax(logits) from one exponentiation


def apply_stages(logits: np.ndarray, stages: Sequence) -> SampleResult:
    """Run the stages in order, recording the distribution after each one."""
    x = np.asarray(logits, dtype=np.float32)
    e, m = _shifted_exp(x)  # the raw softmax is e / s: divided only where the first stage's mass needs it
    s = e.sum()
    lse = float(m + np.log(s))  # = logsumexp(x)
    all_probs, kept, mass = [], [], []
    for j, st in enumerate(stages):
        x = st(x)
        alive = np.isfinite(x)
        n_alive = int(alive.sum())
        p = _softmax_alive(x, alive, n_alive)
        mass.append(_raw_kept_mass(e, s, alive, n_alive) if j == 0 else _kept_mass(all_probs[-1], alive, n_alive))
        all_probs.append(p)
        kept.append(n_alive)
    final = all_probs[-1] if all_probs else softmax(x)
    return SampleResult(x, final, tuple(all_probs), tuple(kept), tuple(mass), logits, lse)


def draw(final_probs: np.ndarray, rng: np.random.Generator, n: int | None = None):
    """Inverse-CDF draw of one token id from a full-vocabulary distribution: u = random() x total,
    the first cdf entry above u. With `n`: an (n,) array of ids, the same rule with one uniform
    each, the uniforms the stream would give n single draws in a row."""
    cdf = np.cumsum(final_probs)
    if n is not None:
        return np.minimum(np.searchsorted(cdf, rng.random(n) * cdf[-1], side="right"), final_probs.size - 1)
    u = rng.random() * cdf[-1]
    return int(min(np.searchsorted(cdf, u, side="right"), final_probs.size - 1))


def greedy_or_draw(result: SampleResult, stages: Sequence, rng: np.random.Generator) -> int:
    if any(isinstance(s, Temperature) and s.temperature == 0 for s in stages):
        return int(np.argmax(result.final_logits))
    return draw(result.final_probs, rng)
