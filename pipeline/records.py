"""Immutable records of one traced generation.

A record holds plain Python / numpy data only (no torch), so the UI, the JSON export
and the tests all read the same thing. The trace file (pipeline/trace_io.py, documented in
docs/TRACE_FORMAT.md) is written from these dataclasses' fields: a field added here, with a
default, travels in traces with no other change.
"""
from __future__ import annotations

from dataclasses import dataclass, field
import numpy as np

from .sampling import build_stages

SCHEMA = "llm-pipeline-trace/2"  # what pipeline.trace_io writes
SCHEMA_V1 = "llm-pipeline-trace/1"  # still read (pipeline.trace_v1)
STOP_REASONS = ("eos", "max_new_tokens", "context_limit")


@dataclass(frozen=True)
class ModelInfo:
    id: str
    source: str  # "embedded" | "hub" | "local" | "config" (tiny test models)
    family: str  # config.model_type
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_model: int
    vocab_size: int
    context_length: int
    dtype: str  # the dtype the forward pass computes in
    n_params: int
    # how the weights are really stored, in words: "float32 safetensors", or for the embedded model
    # "GGUF Q4_1 (embedding Q8_0, norms F32), dequantised to float32"; "" in traces made before it
    weights: str = ""
    weight_bytes: int = 0  # bytes of the weights as stored (the file on disk); 0: not known
    # per layer, the sliding attention window (0: full attention); () in traces made before it
    sliding_windows: tuple[int, ...] = ()


@dataclass(frozen=True)
class Settings:
    temperature: float = 1.0
    top_k: int = 0  # 0: off
    top_p: float = 1.0  # 1.0: off
    repetition_penalty: float = 1.0  # 1.0: off
    seed: int = 0
    max_new_tokens: int = 64
    chat: bool = True
    system_prompt: str | None = None  # None: the chat template's own default
    parse_special: bool = False  # True: special-token text in the prompt acts as special tokens

    def stages(self, context_ids=()) -> list:
        """The sampling stages these settings make, in order (the one place they are built):
        repetition penalty over `context_ids`, temperature, top-k, top-p."""
        return build_stages(temperature=self.temperature, top_k=self.top_k, top_p=self.top_p,
                            repetition_penalty=self.repetition_penalty, context_ids=context_ids)


@dataclass(frozen=True)
class Projection:
    """A fixed linear map from d_model to 2D (PCA of the embedding matrix)."""

    mean: np.ndarray  # (d_model,)
    components: np.ndarray  # (2, d_model)

    def apply(self, x: np.ndarray) -> np.ndarray:
        return ((np.asarray(x, np.float32) - self.mean) @ self.components.T).astype(np.float32)


@dataclass(frozen=True)
class VocabCloud:
    """Common vocabulary tokens in the model's 2D embedding projection (background)."""

    ids: np.ndarray  # (n,) int64
    pieces: tuple[str, ...]
    xy: np.ndarray  # (n, 2) float32


@dataclass(frozen=True)
class PromptRecord:
    text: str  # what the person typed
    system_prompt: str | None
    rendered: str  # after the chat template (what the model reads)
    token_ids: tuple[int, ...]
    pieces: tuple[str, ...]  # readable pieces (byte markers decoded)
    embed_2d: np.ndarray  # (T, 2) input embeddings in the fixed projection
    # the typed text alone, tokenised as plain text (no template): for comparing tokenizers
    text_ids: tuple[int, ...] = ()
    text_pieces: tuple[str, ...] = ()
    # the tokenizer's own token strings (byte markers such as 'Ġ' / '▁' visible) and the bytes
    # each token stands for (None for special tokens), one per token_ids entry
    raw_pieces: tuple[str, ...] = ()
    piece_bytes: tuple[bytes | None, ...] = ()


@dataclass(frozen=True)
class StageRecord:
    """One sampling stage: how many tokens and how much probability survive it."""

    name: str  # "repetition_penalty" | "temperature" | "greedy" | "top_k" | "top_p"
    param: float
    kept: int  # tokens with non-zero probability after the stage
    mass: float  # probability mass (in the distribution entering the stage) of the kept tokens
    probs: np.ndarray  # (N,) distribution after the stage, at the step's `top_ids`


@dataclass(frozen=True)
class StepRecord:
    index: int  # 0 is the prefill step
    phase: str  # "prefill" | "decode"
    position: int  # index of the query whose logits chose this token
    context_ids: tuple[int, ...]  # positions 0..position
    context_pieces: tuple[str, ...]
    token_id: int
    piece: str
    text: str  # text released at this step (held back while a UTF-8 character is incomplete)
    # Next-token distribution over the full vocabulary (top N by raw logit, descending).
    top_ids: np.ndarray  # (N,) int64
    top_pieces: tuple[str, ...]
    top_logits: np.ndarray  # (N,) float32, raw logits
    top_probs: np.ndarray  # (N,) float32, softmax at temperature 1 over the full vocabulary
    top_final_probs: np.ndarray  # (N,) float32, in the distribution sampled from (0 if filtered)
    logsumexp: float  # over the full vocabulary, raw logits
    entropy: float  # bits, of the temperature-1 distribution
    final_entropy: float  # bits, of the distribution sampled from
    stages: tuple[StageRecord, ...]
    chosen_prob: float  # temperature-1 probability of the chosen token
    chosen_final_prob: float  # its probability in the distribution sampled from
    # Inside the model.
    attention: np.ndarray  # (layers, heads, position+1) weights of the query at `position`
    attention_matrix: np.ndarray | None  # (layers, heads, T, T) prefill only; None when decode
    embed_2d: np.ndarray  # (2,) the chosen token's input embedding in the fixed projection
    attn_out_norm: np.ndarray  # (layers,) norm of each attention block's output at `position`
    mlp_out_norm: np.ndarray  # (layers,) norm of each MLP block's output at `position`
    kv_cache_bytes: int  # measured from the cache tensors after this step's forward pass
    kv_cache_bytes_formula: int  # 2 x layers x kv_heads x head_dim x positions x bytes
    ms: float  # the step's own time: forward pass with capture (inside the model's lock), sampling, record
    stop_reason: str | None = None  # set on the last step
    # Large vectors: always captured; written to JSON only by a full export.
    logits: np.ndarray | None = field(default=None, repr=False)  # (vocab,) raw logits
    embedding: np.ndarray | None = field(default=None, repr=False)  # (d_model,) chosen token's input embedding
    hidden: np.ndarray | None = field(default=None, repr=False)  # (layers+1, d_model) residual at `position`
    # The chosen token as the tokenizer stores it.
    raw_piece: str = ""  # the tokenizer's own token string ('Ġ' / '▁' markers visible)
    piece_bytes: bytes | None = None  # the bytes the token stands for; None for special tokens
    # The residual stream of the query at `position` (small: always written to JSON).
    resid_2d: np.ndarray | None = None  # (layers+1, 2) each hidden row / its RMS, in Trace.resid_projection
    resid_norm: np.ndarray | None = None  # (layers+1,) L2 norm of each hidden row
    update_norm: np.ndarray | None = None  # (layers,) L2 norm of hidden[i+1] - hidden[i]: what block i added
    forced: bool = False  # True: a person chose this token (a branch); the model did not draw it
    wait_ms: float = 0.0  # time the step waited for the model's lock (another pass running): not in `ms`
    rng_state: str = ""  # the random stream's state after this step's draws (JSON; "" before it was recorded)


# ---------------------------------------------------------------------------------------
# Speculative decoding (pipeline/speculative.py): a draft proposes, the target checks.


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


# ---------------------------------------------------------------------------------------
# Inside the model (pipeline/inside.py computes these; re-exported there).

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


@dataclass(frozen=True)
class Segment:
    """The steps from `first_step` on were made with `settings`, not the trace's own: a
    continuation, re-sample or branch after the sliders moved."""

    first_step: int
    settings: Settings


@dataclass(frozen=True)
class Trace:
    model: ModelInfo
    settings: Settings
    prompt: PromptRecord
    steps: tuple[StepRecord, ...]
    projection: Projection | None = None
    vocab_cloud: VocabCloud | None = None
    # speculative decoding only: the draft and k, and one record per round
    speculative: SpeculativeInfo | None = None
    rounds: tuple[RoundRecord, ...] = ()
    # the fixed per-model map of RMS-normalised residual rows to 2D (StepRecord.resid_2d)
    resid_projection: Projection | None = None
    # inside the model (pipeline.inside.with_inside fills them before an export)
    lens: tuple[LensRecord, ...] = ()  # logit lens of zero or more steps (each names its step)
    params: ParamCounts | None = None
    machine: MachineInfo | None = None
    position: PositionRecord | None = None
    # continuations made with other settings (empty: every step was made with `settings`)
    segments: tuple[Segment, ...] = ()

    def settings_at(self, step: int) -> Settings:
        """The settings step `step` (a StepRecord.index) was made with."""
        found = self.settings
        for sg in self.segments:
            if sg.first_step <= step:
                found = sg.settings
        return found

    @property
    def stop_reason(self) -> str | None:
        return self.steps[-1].stop_reason if self.steps else None

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.steps)
