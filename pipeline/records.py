"""Immutable records of one traced generation, and their JSON trace format.

A record holds plain Python / numpy data only (no torch), so the UI, the JSON export
and the tests all read the same thing. The JSON format is documented in docs/TRACE_FORMAT.md.

Floats are stored as float32 arrays; JSON writes each float32 as its shortest decimal
form, so reading a trace back gives bit-identical arrays.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SCHEMA = "llm-pipeline-trace/1"
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

    spec: str  # as asked: "layers:10", a Hub id or a local directory
    kind: str  # "layers": the target's own first n layers + its final norm and LM head | "model"
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
    status: str  # "accepted" | "rejected" | "discarded" (after an earlier rejection, never tested)
    # both distributions at a few ids: the union of each one's 10 most likely tokens (and the proposal)
    top_ids: np.ndarray  # (n,) int64, by max(p, q) descending
    top_pieces: tuple[str, ...]
    top_draft_probs: np.ndarray  # (n,) float32, q
    top_target_probs: np.ndarray  # (n,) float32, p


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
    ms: float  # the whole round: draft, target, test, roll-back, records

    @property
    def k(self) -> int:
        return len(self.proposals)


def speculative_summary(rounds) -> dict:
    """Acceptance rate (accepted / proposed) and tokens per target forward pass of some rounds."""
    proposed = sum(len(r.proposals) for r in rounds)
    accepted = sum(r.n_accepted for r in rounds)
    tokens = sum(len(r.token_ids) for r in rounds)
    target = sum(r.target_passes for r in rounds)
    return {
        "rounds": len(rounds),
        "proposed": proposed,
        "accepted": accepted,
        "acceptance_rate": accepted / proposed if proposed else None,
        "tokens": tokens,
        "target_passes": target,
        "draft_passes": sum(r.draft_passes for r in rounds),
        "tokens_per_target_pass": tokens / target if target else None,
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


# ---------------------------------------------------------------------------------------
# JSON (de)serialisation


from .errors import TraceFormatError  # noqa: E402  (re-exported: older callers name it here)


def _f32(a: np.ndarray) -> list:
    """float32 array -> nested lists of Python floats that print as the shortest float32 text."""
    a = np.asarray(a, dtype=np.float32)
    if a.ndim == 0:
        return float(np.format_float_positional(a, unique=True, trim="-")) if np.isfinite(a) else float(a)
    flat = [float(s) for s in a.ravel().astype(str)]
    return np.array(flat, dtype=object).reshape(a.shape).tolist() if a.ndim > 1 else flat


def _tril_lists(m: np.ndarray) -> list:
    """(L, H, T, T) causal matrix -> [layer][head][q] rows of length q+1."""
    L, H, T, _ = m.shape
    return [[[_f32(m[l, h, q, : q + 1]) for q in range(T)] for h in range(H)] for l in range(L)]


def _from_tril(rows: list) -> np.ndarray:
    L, H, T = len(rows), len(rows[0]), len(rows[0][0])
    out = np.zeros((L, H, T, T), dtype=np.float32)
    for l in range(L):
        for h in range(H):
            for q in range(T):
                out[l, h, q, : q + 1] = rows[l][h][q]
    return out


def _bytes_to_json(b: bytes | None) -> list | None:
    return None if b is None else list(b)


def _bytes_from_json(x) -> bytes | None:
    return None if x is None else bytes(int(v) for v in x)


def _stage_to_json(s: StageRecord) -> dict:
    return {"name": s.name, "param": s.param, "kept": s.kept, "mass": s.mass, "probs": _f32(s.probs)}


def _step_to_json(s: StepRecord, *, full: bool) -> dict:
    d: dict[str, Any] = {
        "index": s.index,
        "phase": s.phase,
        "position": s.position,
        "token_id": s.token_id,
        "piece": s.piece,
        "text": s.text,
        "top": [
            {"id": int(i), "piece": p, "logit": _f32(lg), "prob": _f32(pr), "final_prob": _f32(fp)}
            for i, p, lg, pr, fp in zip(s.top_ids, s.top_pieces, s.top_logits, s.top_probs, s.top_final_probs)
        ],
        "logsumexp": s.logsumexp,
        "entropy": s.entropy,
        "final_entropy": s.final_entropy,
        "stages": [_stage_to_json(st) for st in s.stages],
        "chosen_prob": s.chosen_prob,
        "chosen_final_prob": s.chosen_final_prob,
        "attention": _f32(s.attention),
        "embed_2d": _f32(s.embed_2d),
        "attn_out_norm": _f32(s.attn_out_norm),
        "mlp_out_norm": _f32(s.mlp_out_norm),
        "kv_cache_bytes": s.kv_cache_bytes,
        "kv_cache_bytes_formula": s.kv_cache_bytes_formula,
        "ms": s.ms,
        "stop_reason": s.stop_reason,
        "raw_piece": s.raw_piece,
        "piece_bytes": _bytes_to_json(s.piece_bytes),
        "wait_ms": s.wait_ms,
        "rng_state": s.rng_state,
    }
    if s.forced:
        d["forced"] = True
    for name in ("resid_2d", "resid_norm", "update_norm"):
        if getattr(s, name) is not None:
            d[name] = _f32(getattr(s, name))
    if s.attention_matrix is not None:
        d["attention_matrix"] = _tril_lists(s.attention_matrix)
    if full:
        for name in ("logits", "embedding", "hidden"):
            if getattr(s, name) is not None:
                d[name] = _f32(getattr(s, name))
    return d


def _top_list(ids, pieces, **arrays) -> list:
    """Parallel top arrays -> [{id, piece, <name>: float32 value, ...}]."""
    cols = {k: _f32(v) for k, v in arrays.items()}
    return [{"id": int(i), "piece": p, **{k: c[n] for k, c in cols.items()}} for n, (i, p) in enumerate(zip(ids, pieces))]


def _round_to_json(r: RoundRecord) -> dict:
    res, bonus = r.residual, r.bonus
    return {
        "index": r.index,
        "position": r.position,
        "proposals": [
            {
                "token_id": pr.token_id,
                "piece": pr.piece,
                "draft_prob": pr.draft_prob,
                "target_prob": pr.target_prob,
                "accept_prob": pr.accept_prob,
                "u": pr.u,
                "status": pr.status,
                "top": _top_list(pr.top_ids, pr.top_pieces, draft_prob=pr.top_draft_probs, target_prob=pr.top_target_probs),
            }
            for pr in r.proposals
        ],
        "n_accepted": r.n_accepted,
        "residual": None
        if res is None
        else {
            "token_id": res.token_id,
            "piece": res.piece,
            "prob": res.prob,
            "mass": res.mass,
            "top": _top_list(res.top_ids, res.top_pieces, prob=res.top_probs),
        },
        "bonus": None if bonus is None else dataclasses.asdict(bonus),
        "token_ids": list(r.token_ids),
        "first_step": r.first_step,
        "draft_passes": r.draft_passes,
        "target_passes": r.target_passes,
        "draft_tokens_fed": r.draft_tokens_fed,
        "target_tokens_fed": r.target_tokens_fed,
        "draft_rollback": r.draft_rollback,
        "target_rollback": r.target_rollback,
        "draft_ms": r.draft_ms,
        "target_ms": r.target_ms,
        "ms": r.ms,
    }


def trace_to_json(trace: Trace, *, full: bool = False) -> dict:
    """The JSON-ready dict of a trace.

    `full` adds each step's large vectors (full-vocabulary logits, input embedding, hidden
    states): about 0.3 MB a step for a 135M model. Without them a trace stays small and
    every panel still draws."""
    p = trace.prompt
    d = {
        "schema": SCHEMA,
        "model": dataclasses.asdict(trace.model),
        "settings": dataclasses.asdict(trace.settings),
        "prompt": {
            "text": p.text,
            "system_prompt": p.system_prompt,
            "rendered": p.rendered,
            "token_ids": list(p.token_ids),
            "pieces": list(p.pieces),
            "embed_2d": _f32(p.embed_2d),
            "text_ids": list(p.text_ids),
            "text_pieces": list(p.text_pieces),
            "raw_pieces": list(p.raw_pieces),
            "piece_bytes": [_bytes_to_json(b) for b in p.piece_bytes],
        },
        "steps": [_step_to_json(s, full=full) for s in trace.steps],
        "stop_reason": trace.stop_reason,
        "text": trace.text,
    }
    if trace.projection is not None:
        d["projection"] = {"mean": _f32(trace.projection.mean), "components": _f32(trace.projection.components)}
    if trace.resid_projection is not None:
        d["resid_projection"] = {"mean": _f32(trace.resid_projection.mean), "components": _f32(trace.resid_projection.components)}
    if trace.vocab_cloud is not None:
        c = trace.vocab_cloud
        d["vocab_cloud"] = {"ids": c.ids.tolist(), "pieces": list(c.pieces), "xy": _f32(c.xy)}
    if trace.speculative is not None:
        d["speculative"] = {"k": trace.speculative.k, "draft": dataclasses.asdict(trace.speculative.draft)}
        d["rounds"] = [_round_to_json(r) for r in trace.rounds]
    if trace.segments:
        d["segments"] = [{"first_step": sg.first_step, "settings": dataclasses.asdict(sg.settings)} for sg in trace.segments]
    if trace.lens:
        d["lens"] = [_lens_to_json(r) for r in trace.lens]
    if trace.params is not None:
        d["params"] = dataclasses.asdict(trace.params)
    if trace.machine is not None:
        d["machine"] = dataclasses.asdict(trace.machine)
    if trace.position is not None:
        pos = trace.position
        d["position"] = {
            "kind": pos.kind,
            "rope_theta": pos.rope_theta,
            "rotary_dim": pos.rotary_dim,
            "inv_freq": None if pos.inv_freq is None else _f32(pos.inv_freq),
            "learned_2d": None if pos.learned_2d is None else _f32(pos.learned_2d),
        }
    return d


def _lens_to_json(r: LensRecord) -> dict:
    return {
        "step": r.step,
        "position": r.position,
        "token_id": r.token_id,
        "piece": r.piece,
        "top_ids": np.asarray(r.top_ids, np.int64).tolist(),
        "top_pieces": [list(row) for row in r.top_pieces],
        "top_probs": _f32(r.top_probs),
        "chosen_probs": _f32(r.chosen_probs),
        "chosen_ranks": np.asarray(r.chosen_ranks, np.int64).tolist(),
        "entropy": _f32(r.entropy),
    }


def _lens_from_json(d: dict) -> LensRecord:
    k = len(d["top_pieces"][0]) if d["top_pieces"] else LENS_TOP
    return LensRecord(
        step=int(d["step"]),
        position=int(d["position"]),
        token_id=int(d["token_id"]),
        piece=d["piece"],
        top_ids=_arr(d["top_ids"], np.int64).reshape(-1, k),
        top_pieces=tuple(tuple(row) for row in d["top_pieces"]),
        top_probs=_arr(d["top_probs"]).reshape(-1, k),
        chosen_probs=_arr(d["chosen_probs"]),
        chosen_ranks=_arr(d["chosen_ranks"], np.int64),
        entropy=_arr(d["entropy"]),
    )


def _position_from_json(d: dict) -> PositionRecord:
    return PositionRecord(
        kind=d["kind"],
        rope_theta=None if d.get("rope_theta") is None else float(d["rope_theta"]),
        rotary_dim=None if d.get("rotary_dim") is None else int(d["rotary_dim"]),
        inv_freq=None if d.get("inv_freq") is None else _arr(d["inv_freq"]),
        learned_2d=None if d.get("learned_2d") is None else _arr(d["learned_2d"]).reshape(-1, 2),
    )


def dumps(trace: Trace, *, full: bool = False) -> str:
    return json.dumps(trace_to_json(trace, full=full), ensure_ascii=False, separators=(",", ":"))


def _arr(x, dtype=np.float32) -> np.ndarray:
    return np.asarray(x, dtype=dtype)


def _step_from_json(d: dict, context_ids: tuple[int, ...], context_pieces: tuple[str, ...]) -> StepRecord:
    top = d["top"]
    am = d.get("attention_matrix")
    opt = {k: (_arr(d[k]) if d.get(k) is not None else None) for k in ("logits", "embedding", "hidden")}
    return StepRecord(
        index=int(d["index"]),
        phase=d["phase"],
        position=int(d["position"]),
        context_ids=context_ids,
        context_pieces=context_pieces,
        token_id=int(d["token_id"]),
        piece=d["piece"],
        text=d["text"],
        top_ids=_arr([t["id"] for t in top], np.int64),
        top_pieces=tuple(t["piece"] for t in top),
        top_logits=_arr([t["logit"] for t in top]),
        top_probs=_arr([t["prob"] for t in top]),
        top_final_probs=_arr([t["final_prob"] for t in top]),
        logsumexp=float(d["logsumexp"]),
        entropy=float(d["entropy"]),
        final_entropy=float(d["final_entropy"]),
        stages=tuple(
            StageRecord(s["name"], float(s["param"]), int(s["kept"]), float(s["mass"]), _arr(s["probs"]))
            for s in d["stages"]
        ),
        chosen_prob=float(d["chosen_prob"]),
        chosen_final_prob=float(d["chosen_final_prob"]),
        attention=_arr(d["attention"]),
        attention_matrix=_from_tril(am) if am is not None else None,
        embed_2d=_arr(d["embed_2d"]),
        attn_out_norm=_arr(d["attn_out_norm"]),
        mlp_out_norm=_arr(d["mlp_out_norm"]),
        kv_cache_bytes=int(d["kv_cache_bytes"]),
        kv_cache_bytes_formula=int(d["kv_cache_bytes_formula"]),
        ms=float(d["ms"]),
        stop_reason=d.get("stop_reason"),
        raw_piece=d.get("raw_piece", ""),
        piece_bytes=_bytes_from_json(d.get("piece_bytes")),
        resid_2d=_arr(d["resid_2d"]).reshape(-1, 2) if d.get("resid_2d") is not None else None,
        resid_norm=_arr(d["resid_norm"]) if d.get("resid_norm") is not None else None,
        update_norm=_arr(d["update_norm"]) if d.get("update_norm") is not None else None,
        forced=bool(d.get("forced", False)),
        wait_ms=float(d.get("wait_ms", 0.0)),
        rng_state=d.get("rng_state", ""),
        **opt,
    )


def _top_arrays(top: list, *names: str) -> tuple:
    """[{id, piece, <name>...}] -> (ids int64, pieces, one float32 array per name)."""
    return (_arr([t["id"] for t in top], np.int64), tuple(t["piece"] for t in top), *(_arr([t[n] for t in top]) for n in names))


def _round_from_json(d: dict) -> RoundRecord:
    proposals = []
    for p in d["proposals"]:
        ids, pieces, q, pt = _top_arrays(p["top"], "draft_prob", "target_prob")
        proposals.append(
            ProposalRecord(
                int(p["token_id"]), p["piece"], float(p["draft_prob"]), float(p["target_prob"]), float(p["accept_prob"]),
                None if p["u"] is None else float(p["u"]), p["status"], ids, pieces, q, pt,
            )
        )
    res, bonus = d["residual"], d["bonus"]
    residual = None
    if res is not None:
        ids, pieces, probs = _top_arrays(res["top"], "prob")
        residual = ResidualRecord(int(res["token_id"]), res["piece"], float(res["prob"]), float(res["mass"]), ids, pieces, probs)
    return RoundRecord(
        index=int(d["index"]),
        position=int(d["position"]),
        proposals=tuple(proposals),
        n_accepted=int(d["n_accepted"]),
        residual=residual,
        bonus=None if bonus is None else BonusRecord(int(bonus["token_id"]), bonus["piece"], float(bonus["prob"])),
        token_ids=tuple(int(i) for i in d["token_ids"]),
        **{k: int(d[k]) for k in ("first_step", "draft_passes", "target_passes", "draft_tokens_fed", "target_tokens_fed", "draft_rollback", "target_rollback")},
        **{k: float(d[k]) for k in ("draft_ms", "target_ms", "ms")},
    )


def trace_from_json(d: Any) -> Trace:
    """Rebuild a Trace from its JSON dict. Raises TraceFormatError with a readable reason."""
    if not isinstance(d, dict) or d.get("schema") != SCHEMA:
        found = d.get("schema") if isinstance(d, dict) else type(d).__name__
        raise TraceFormatError(f"this is not an {SCHEMA} trace (schema: {found!r}); export one from this app or `python -m pipeline trace`")
    try:
        p = d["prompt"]
        prompt = PromptRecord(
            text=p["text"],
            system_prompt=p.get("system_prompt"),
            rendered=p["rendered"],
            token_ids=tuple(int(i) for i in p["token_ids"]),
            pieces=tuple(p["pieces"]),
            embed_2d=_arr(p["embed_2d"]).reshape(-1, 2),
            text_ids=tuple(int(i) for i in p.get("text_ids", ())),
            text_pieces=tuple(p.get("text_pieces", ())),
            raw_pieces=tuple(p.get("raw_pieces", ())),
            piece_bytes=tuple(_bytes_from_json(b) for b in p.get("piece_bytes", ())),
        )
        ids, pieces = list(prompt.token_ids), list(prompt.pieces)
        steps = []
        for s in d["steps"]:
            steps.append(_step_from_json(s, tuple(ids), tuple(pieces)))
            ids.append(int(s["token_id"]))
            pieces.append(s["piece"])
        proj = d.get("projection")
        cloud = d.get("vocab_cloud")
        spec = d.get("speculative")
        rp = d.get("resid_projection")
        return Trace(
            model=ModelInfo(**d["model"]),
            settings=Settings(**d["settings"]),
            prompt=prompt,
            steps=tuple(steps),
            projection=Projection(_arr(proj["mean"]), _arr(proj["components"])) if proj else None,
            vocab_cloud=(
                VocabCloud(_arr(cloud["ids"], np.int64), tuple(cloud["pieces"]), _arr(cloud["xy"]).reshape(-1, 2))
                if cloud
                else None
            ),
            speculative=SpeculativeInfo(int(spec["k"]), DraftInfo(**spec["draft"])) if spec else None,
            rounds=tuple(_round_from_json(r) for r in d.get("rounds", ())),
            resid_projection=Projection(_arr(rp["mean"]), _arr(rp["components"]).reshape(2, -1)) if rp else None,
            lens=tuple(_lens_from_json(r) for r in d.get("lens", ())),
            params=ParamCounts(**d["params"]) if d.get("params") else None,
            machine=MachineInfo(**d["machine"]) if d.get("machine") else None,
            position=_position_from_json(d["position"]) if d.get("position") else None,
            segments=tuple(Segment(int(sg["first_step"]), Settings(**sg["settings"])) for sg in d.get("segments", ())),
        )
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise TraceFormatError(f"the trace file is damaged or incomplete ({type(e).__name__}: {e})") from e


def loads(text: str | bytes) -> Trace:
    try:
        d = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TraceFormatError(f"the file is not valid JSON ({e}); pick a .json trace exported by this app") from e
    return trace_from_json(d)


def records_equal(a: Any, b: Any) -> bool:
    """Deep equality for records holding numpy arrays (exact, NaN-aware)."""
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        if type(a) is not type(b):
            return False
        return all(records_equal(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(records_equal(x, y) for x, y in zip(a, b))
    return a == b
