"""Records of speculative decoding (pipeline/speculative/decoding.py): a draft proposes, the target checks.

Frozen dataclasses of plain Python / numpy data, like pipeline.trace.records (which re-exports them and
whose Trace holds them), and the arithmetic that summarises a run's rounds.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DraftInfo:
    """The cheap model that proposes tokens for the target to check."""

    spec: str  # as asked: "ngram", "ngram:3", "layers:10", a Hub id or a local directory
    kind: str  # "ngram": prompt lookup, no model | "layers": the target's own first n layers + its final norm and LM head | "model"
    id: str  # shown name
    n_layers: int
    n_params: int  # parameters one draft forward pass uses
    shares_weights: bool  # True for "layers": the draft is a view of the target, no extra memory


@dataclass(frozen=True)
class SpeculativeInfo:
    k: int  # proposals per round (fewer in the last round, when fewer tokens are left to generate)
    draft: DraftInfo


@dataclass(frozen=True)
class ProposalRecord:
    """One draft proposal and the test that accepted or rejected it.

    p and q are the target's and the draft's next-token distributions after the same
    sampling stages (temperature / top-k / top-p / repetition penalty)."""

    token_id: int
    piece: str
    draft_prob: float  # q(token): the draft drew it from q
    target_prob: float  # p(token)
    accept_prob: float  # min(1, p / q)
    u: float | None  # the uniform number in [0, 1) that decided: accepted iff u < accept_prob; None if never tested
    status: str  # "accepted" | "rejected" | "discarded" (never tested: after a rejection, or after an accepted end of sequence)
    # both distributions at a few ids: the union of each one's 10 most likely tokens (and the proposal)
    top_ids: np.ndarray  # (n,) int64, by max(p, q) descending
    top_pieces: tuple[str, ...]
    top_draft_probs: np.ndarray  # (n,) float32, q
    top_target_probs: np.ndarray  # (n,) float32, p
    source_position: int | None = None  # prompt lookup: the context position this token was copied from (None: a model drew it)


@dataclass(frozen=True)
class ResidualRecord:
    """After a rejection the token comes from the residual: max(0, p - q), normalised."""

    token_id: int
    piece: str
    prob: float  # its probability in the normalised residual
    mass: float  # sum of max(0, p - q) before normalising: the chance that a proposal here is rejected
    top_ids: np.ndarray  # (n,) int64, the residual's largest non-zero entries (at most 10), descending
    top_pieces: tuple[str, ...]
    top_probs: np.ndarray  # (n,) float32, normalised residual


@dataclass(frozen=True)
class BonusRecord:
    """After all proposals were accepted the target's pass gives one more token for free."""

    token_id: int
    piece: str
    prob: float  # its probability in the target's distribution (after the sampling stages)


@dataclass(frozen=True)
class RoundRecord:
    """One draft-then-verify round: up to k proposals, one target forward pass, 1 to k+1 new tokens."""

    index: int
    position: int  # the query at this position (the context's last token) predicts the first proposal
    proposals: tuple[ProposalRecord, ...]
    n_accepted: int
    residual: ResidualRecord | None  # set when a proposal was rejected
    bonus: BonusRecord | None  # set when every proposal was accepted
    token_ids: tuple[int, ...]  # what the round added: accepted proposals, then the residual / bonus token (cut at a stop)
    first_step: int  # index of the step (StepRecord) of token_ids[0]
    draft_passes: int  # forward passes of the draft
    target_passes: int  # forward passes of the target (1)
    draft_tokens_fed: int
    target_tokens_fed: int
    draft_rollback: int  # positions removed from the draft's KV cache after the test
    target_rollback: int  # positions removed from the target's KV cache (the rejected proposals)
    draft_ms: float
    target_ms: float  # the verifying forward pass, with capture
    ms: float  # the whole round: draft, target, test, roll-back, records (not the waits for the model's lock: its steps' wait_ms)
    match_length: int = 0  # prompt lookup: length of the n-gram that matched (0: nothing matched, or a model draft)

    @property
    def k(self) -> int:
        return len(self.proposals)

    @property
    def n_tested(self) -> int:
        """Proposals whose test ran (a u was drawn): accepted or rejected."""
        return sum(p.u is not None for p in self.proposals)


def expected_tokens_per_pass(alpha: float, k: int) -> float:
    """Leviathan et al. (2023), eq. 1: the expected tokens one target pass yields when each
    proposal is accepted with probability alpha, independently: (1 - alpha^(k+1)) / (1 - alpha)."""
    if alpha >= 1.0:
        return float(k + 1)
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def speculative_summary(rounds) -> dict:
    """How the proposals fared, counted two ways, and tokens per target forward pass.

    acceptance_rate: Leviathan et al.'s alpha, accepted / tested (a proposal after a rejection is
    never tested); share_accepted: accepted / all proposals. expected_tokens_per_target_pass: the
    paper's (1 - alpha^(k+1)) / (1 - alpha) for each round's own k (0 for a plain step), averaged
    over the rounds, to set beside the measured tokens_per_target_pass."""
    proposed = sum(len(r.proposals) for r in rounds)
    tested = sum(r.n_tested for r in rounds)
    accepted = sum(r.n_accepted for r in rounds)
    tokens = sum(len(r.token_ids) for r in rounds)
    target = sum(r.target_passes for r in rounds)
    alpha = accepted / tested if tested else None
    # no proposal at all (every round a plain step): alpha is undefined, and every round yields 1
    expected = sum(expected_tokens_per_pass(alpha or 0.0, r.k) for r in rounds) / len(rounds) if rounds else None
    return {
        "rounds": len(rounds),
        "proposed": proposed,
        "tested": tested,
        "accepted": accepted,
        "acceptance_rate": alpha,
        "share_accepted": accepted / proposed if proposed else None,
        "rounds_without_proposals": sum(r.k == 0 for r in rounds),
        "tokens": tokens,
        "target_passes": target,
        "draft_passes": sum(r.draft_passes for r in rounds),
        "tokens_per_target_pass": tokens / target if target else None,
        "expected_tokens_per_target_pass": expected,
        "draft_ms": sum(r.draft_ms for r in rounds),
        "target_ms": sum(r.target_ms for r in rounds),
        "ms": sum(r.ms for r in rounds),
    }
