"""Sampling as a list of small pure logit transforms, each stage's effect recorded.

numpy only (no torch), so the app can reshape a captured step's distribution when a
slider moves, with exactly the code that chose the token.

Order and definitions follow transformers: repetition penalty (a logits processor) first,
then temperature, top-k, top-p. Top-p keeps the smallest set of most likely tokens whose
cumulative probability reaches p. Temperature 0 means greedy (argmax). Probabilities are
always normalised over the full vocabulary.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .errors import SettingsError  # the stages raise it

NEG_INF = -np.inf
LOG2E = 1.0 / np.log(2.0)


def softmax(logits: np.ndarray) -> np.ndarray:
    """float64 softmax over the full vocabulary; -inf entries get probability 0."""
    x = np.asarray(logits, dtype=np.float64)
    m = np.max(x)
    e = np.exp(x - m)
    return e / e.sum()


def logsumexp(logits: np.ndarray) -> float:
    x = np.asarray(logits, dtype=np.float64)
    m = np.max(x)
    return float(m + np.log(np.exp(x - m).sum()))


def entropy_bits(probs: np.ndarray) -> float:
    p = probs[probs > 0]
    return float(-(p * np.log(p)).sum() * LOG2E)


@dataclass(frozen=True)
class RepetitionPenalty:
    """CTRL-style: logits of tokens already in the context are divided (if > 0) or multiplied (if < 0)."""

    penalty: float
    context_ids: tuple[int, ...] = ()
    name = "repetition_penalty"

    def __post_init__(self):
        if not (self.penalty > 0) or not np.isfinite(self.penalty):
            raise SettingsError(f"repetition penalty must be a positive number (1.0 turns it off), not {self.penalty}")

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
            raise SettingsError(f"temperature must be 0 (greedy) or more, not {self.temperature}")

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
            raise SettingsError(f"top-k must be a whole number, 0 (off) or more, not {self.k}")

    @property
    def param(self) -> float:
        return float(self.k)

    def __call__(self, logits: np.ndarray) -> np.ndarray:
        x = np.asarray(logits, dtype=np.float32)
        if self.k == 0 or self.k >= x.size:
            return x.copy()
        kth = np.partition(x, x.size - self.k)[x.size - self.k]  # k-th largest
        return np.where(x < kth, np.float32(NEG_INF), x)  # ties with the k-th are kept, as in transformers


@dataclass(frozen=True)
class TopP:
    p: float
    name = "top_p"

    def __post_init__(self):
        if not (0 < self.p <= 1):
            raise SettingsError(f"top-p must be in (0, 1] (1.0 turns it off), not {self.p}")

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


def build_stages(
    *, temperature: float, top_k: int = 0, top_p: float = 1.0, repetition_penalty: float = 1.0, context_ids: Sequence[int] = ()
) -> list:
    """The list of transforms for these settings; validates every argument."""
    stages: list = []
    if repetition_penalty != 1.0 or not (repetition_penalty > 0):
        stages.append(RepetitionPenalty(float(repetition_penalty), tuple(int(i) for i in context_ids)))
    stages.append(Temperature(float(temperature)))
    tk, tp = TopK(int(top_k) if float(top_k).is_integer() else top_k), TopP(float(top_p))
    if temperature > 0:  # after greedy, top-k / top-p cannot change anything
        if tk.k:
            stages.append(tk)
        if tp.p < 1.0:
            stages.append(tp)
    return stages


@dataclass(frozen=True)
class SampleResult:
    final_logits: np.ndarray  # (vocab,) after every stage (-inf where removed)
    final_probs: np.ndarray  # (vocab,) float64, the distribution sampled from
    stage_probs: tuple[np.ndarray, ...]  # (vocab,) distribution after each stage
    stage_kept: tuple[int, ...]
    stage_mass: tuple[float, ...]  # mass of the kept tokens in the distribution entering the stage


def apply_stages(logits: np.ndarray, stages: Sequence) -> SampleResult:
    """Run the stages in order, recording the distribution after each one."""
    x = np.asarray(logits, dtype=np.float32)
    probs_in = softmax(x)
    all_probs, kept, mass = [], [], []
    for st in stages:
        x = st(x)
        p = softmax(x)
        alive = np.isfinite(x)
        all_probs.append(p)
        kept.append(int(alive.sum()))
        mass.append(float(probs_in[alive].sum()))
        probs_in = p
    final = all_probs[-1] if all_probs else softmax(x)
    return SampleResult(x, final, tuple(all_probs), tuple(kept), tuple(mass))


def draw(final_probs: np.ndarray, rng: np.random.Generator) -> int:
    """Inverse-CDF draw of one token id from a full-vocabulary distribution."""
    cdf = np.cumsum(final_probs)
    u = rng.random() * cdf[-1]
    return int(min(np.searchsorted(cdf, u, side="right"), final_probs.size - 1))


def greedy_or_draw(result: SampleResult, stages: Sequence, rng: np.random.Generator) -> int:
    if any(isinstance(s, Temperature) and s.temperature == 0 for s in stages):
        return int(np.argmax(result.final_logits))
    return draw(result.final_probs, rng)
