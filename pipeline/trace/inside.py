"""Records of what happens inside the model (pipeline/inside/analyses.py computes them): the logit lens,
the KV cache recomputed, parameter counts, the machine's limits, compute accounting, positions
and the token swap.

Frozen dataclasses of plain Python / numpy data, like pipeline.trace.records (which re-exports them and
whose Trace holds some of them).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


LENS_TOP = 5  # candidates kept per layer


@dataclass(frozen=True)
class LensRecord:
    """Logit lens of one step: the final norm and LM head applied to the residual stream of the
    query at `position` after every layer. Row 0 is the input embedding; row i (1..L) is after
    block i; row L is what the model itself predicted (it equals the step's own distribution)."""

    step: int  # StepRecord.index
    position: int
    token_id: int  # the token the step chose
    piece: str
    top_ids: np.ndarray  # (L+1, LENS_TOP) int64, most likely first
    top_pieces: tuple[tuple[str, ...], ...]  # (L+1) x LENS_TOP
    top_probs: np.ndarray  # (L+1, LENS_TOP) float32, softmax over the full vocabulary at temperature 1
    chosen_probs: np.ndarray  # (L+1,) float32, probability of the chosen token at each depth
    chosen_ranks: np.ndarray  # (L+1,) int64, its rank (0 = most likely) at each depth
    entropy: np.ndarray  # (L+1,) float32, bits


@dataclass(frozen=True)
class KVCompareRecord:
    """One step computed twice: with the KV cache (the step's own pass: only the new token goes
    through the model) and without it (the whole context up to `position` recomputed)."""

    step: int
    position: int
    tokens_with: int  # tokens fed through the model with the cache (1 for a decode step; T for prefill)
    tokens_without: int  # position + 1
    macs_with: float  # multiply-adds of the pass with the cache (weights x tokens + attention)
    macs_without: float
    ms_with: float  # measured now, same machine, median of a few repeats
    ms_without: float
    max_abs_diff: float  # max |logit with cache - logit without| over the full vocabulary
    same_argmax: bool
    top_ids: np.ndarray  # (n,) int64 the step's top candidates
    logits_with: np.ndarray  # (n,) float32 at top_ids
    logits_without: np.ndarray  # (n,) float32 at top_ids
    argmax_id: int = -1  # the token the pass with the cache ranks first (over the full vocabulary)


@dataclass(frozen=True)
class ParamCounts:
    """Parameters of the model by where a forward pass reads them.

    total = embedding + lm_head + positions + n_layers x (per_layer_attn + per_layer_mlp +
    per_layer_norm) + final_norm + other, counting a tied matrix once. Per-layer counts are
    block 0's (biases included); `per_layer_norm` is whatever a block holds outside its
    attention and feed-forward modules (its norms)."""

    total: int
    embedding: int  # the input embedding matrix (a lookup reads one row per token)
    lm_head: int  # the output projection (0 extra when tied to the embedding)
    tied: bool  # the LM head is the embedding matrix
    per_layer_attn: int  # one block's attention weights
    per_layer_mlp: int  # one block's feed-forward weights
    per_layer_norm: int
    final_norm: int
    n_layers: int
    bytes_per_param: int  # 4 for float32
    positions: int = 0  # learned position embeddings (GPT-2's wpe; a lookup, like the embedding)
    other: int = 0  # anything not placed above (0 for the supported families)

    @property
    def read_per_pass(self) -> int:
        """Parameters a forward pass reads in full: every block, the final norm, the LM head."""
        return self.n_layers * (self.per_layer_attn + self.per_layer_mlp + self.per_layer_norm) + self.final_norm + self.lm_head_rows

    @property
    def lm_head_rows(self) -> int:
        return self.embedding if self.tied else self.lm_head


@dataclass(frozen=True)
class MachineInfo:
    """This machine's measured limits (not a datasheet)."""

    memory_gb_s: float  # sustained memory bandwidth, measured by copying a large array
    matmul_gflop_s: float  # float32 matrix-multiply throughput, measured
    threads: int  # torch threads


@dataclass(frozen=True)
class AccountingRecord:
    """Compute and memory of one step, against the machine's measured limits."""

    step: int
    phase: str
    tokens: int  # tokens the pass processed (T for prefill, 1 for decode)
    params_read: int
    macs: float  # multiply-adds: ~params x tokens + attention (QK^T and AV)
    weight_bytes: float  # bytes of weights read
    kv_bytes_read: float  # bytes of KV cache read by attention
    arithmetic_intensity: float  # flops (2 x macs) per byte read
    ms: float  # the step's measured wall time
    memory_bound_ms: float  # (weight + KV bytes) / measured bandwidth: the floor if memory limits
    compute_bound_ms: float  # 2 x macs / measured matmul throughput: the floor if compute limits
    machine_balance: float  # matmul flops per byte of bandwidth: above it a pass is compute-bound
    batch_rows: int = 1  # the pass ran for this many visitors' generations at once (pipeline.batching): `ms` is its time

    @property
    def bound(self) -> str:
        """"compute" above the machine balance, else "memory": which floor is the higher one."""
        return "compute" if self.arithmetic_intensity > self.machine_balance else "memory"


@dataclass(frozen=True)
class PositionRecord:
    """How the model knows order."""

    kind: str  # "rope" | "learned" | "none"
    rope_theta: float | None
    rotary_dim: int | None  # dimensions of a head that rotate (head_dim x partial_rotary_factor)
    inv_freq: np.ndarray | None  # (rotary_dim/2,) radians per position of each frequency pair
    learned_2d: np.ndarray | None  # (n, 2) learned position vectors 0..n-1 in the model's fixed projection


@dataclass(frozen=True)
class SwapRecord:
    """The same prompt with two tokens swapped: attention of the last query, per layer (mean of
    heads), over the keys, with the swapped run's keys put back in the original order."""

    pieces: tuple[str, ...]  # the original prompt's pieces
    swapped_pieces: tuple[str, ...]
    i: int
    j: int
    attention: np.ndarray  # (L, T) original
    attention_swapped: np.ndarray  # (L, T) swapped run, keys re-ordered to match `pieces`
    max_abs_diff: float  # over layers and keys
    top_piece: str  # the next-token prediction of each run
    top_piece_swapped: str
