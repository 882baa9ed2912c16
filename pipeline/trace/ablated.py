"""Records of switching a part of the model off (pipeline/inside/ablate.py computes them): one step recomputed with one
attention head, one attention block or one MLP block set to zero, and the map of every head switched off in turn.

Frozen dataclasses of plain Python / numpy data (no torch: viz/ reads them), with the small arithmetic every reader
shares (probabilities at temperature 1, the top tokens, the tokens that moved most) as methods, so the command line,
the figures and the tests compute it one way.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PARTS = ("head", "attn", "mlp")  # one attention head, the whole attention block, the MLP block


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Log-probabilities at temperature 1, in float64 (the full vocabulary)."""
    x = np.asarray(logits, np.float64)
    m = x.max()
    return x - (m + np.log(np.exp(x - m).sum()))


def top_by_prob(probs: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids, probs) of the `n` likeliest tokens, likeliest first (ties: the lower id first)."""
    p = np.asarray(probs, np.float64)
    n = min(int(n), p.size)
    ids = np.lexsort((np.arange(p.size), -p))[:n]
    return ids.astype(np.int64), p[ids]


@dataclass(frozen=True)
class AblationRecord:
    """The step's next-token distribution with nothing switched off (`logits_before`, the model's own forward pass)
    and with `part` of block `layer` set to zero at every position (`logits_after`); `token_id` is the step's chosen
    token. Both are raw logits over the full vocabulary; every probability is derived at temperature 1."""

    layer: int
    part: str  # "head" | "attn" | "mlp"
    head: int | None  # for part == "head"
    token_id: int
    context_ids: tuple[int, ...]
    logits_before: np.ndarray  # (vocab,) float32
    logits_after: np.ndarray  # (vocab,) float32
    ms: float = 0.0  # the passes' own time, inside the model's lock
    path: str = "upper"  # "upper": the blocks from `layer` on, run again on the stream that enters it; "full": every block

    def logprobs(self, which: str) -> np.ndarray:
        return log_softmax(self.logits_before if which == "before" else self.logits_after)

    def probs(self, which: str) -> np.ndarray:
        return np.exp(self.logprobs(which))

    @property
    def chosen_before(self) -> float:
        return float(self.probs("before")[self.token_id])

    @property
    def chosen_after(self) -> float:
        return float(self.probs("after")[self.token_id])

    @property
    def logprob_change(self) -> float:
        """The change in the chosen token's log-probability (natural log): negative when switching off hurt it."""
        return float(self.logprobs("after")[self.token_id] - self.logprobs("before")[self.token_id])

    def top(self, which: str, n: int = 100) -> tuple[np.ndarray, np.ndarray]:
        return top_by_prob(self.probs(which), n)

    def movers(self, n: int = 8) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids, before, after) of the `n` tokens whose probability changed most (by |after - before|), largest first."""
        b, a = self.probs("before"), self.probs("after")
        ids = np.lexsort((np.arange(b.size), -np.abs(a - b)))[: min(int(n), b.size)]
        return ids.astype(np.int64), b[ids], a[ids]


@dataclass(frozen=True)
class HeadMapRecord:
    """Which heads matter for this token: for each block computed (`layers`), each head switched off in turn, the
    chosen token's log-probability after (`logprob_after`, NaN in the rows not computed) against `logprob_before`."""

    token_id: int
    context_len: int
    n_layers: int
    n_heads: int
    logprob_before: float  # natural log, the model's own forward pass
    logprob_after: np.ndarray  # (n_layers, n_heads) float64, NaN where not computed
    layers: tuple[int, ...]  # the blocks computed so far, in the order computed
    seconds: float = 0.0  # wall time so far (the clean pass included)
    path: str = "upper"

    @property
    def delta(self) -> np.ndarray:
        """(n_layers, n_heads) the change in the chosen token's log-probability; NaN where not computed."""
        return self.logprob_after - self.logprob_before

    @property
    def done(self) -> bool:
        return len(self.layers) == self.n_layers

    def largest(self, n: int = 5) -> list[tuple[int, int, float]]:
        """(block, head, change) of the `n` largest effects by size, computed cells only."""
        d = self.delta
        cells = [(abs(d[l, h]), l, h) for l in self.layers for h in range(self.n_heads) if np.isfinite(d[l, h])]
        cells.sort(key=lambda c: (-c[0], c[1], c[2]))
        return [(int(l), int(h), float(d[l, h])) for _, l, h in cells[:n]]
