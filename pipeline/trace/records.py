"""Immutable records of one traced generation.

A record holds plain Python / numpy data only (no torch), so the UI, the JSON export
and the tests all read the same thing. The trace file (pipeline/trace/files.py, documented in
docs/TRACE_FORMAT.md) is written from these dataclasses' fields: a field added here, with a
default, travels in traces with no other change.

The records of speculative decoding and of the inside-the-model views have modules of their own
(records_speculative, records_inside); every record is imported from here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
import numpy as np

from pipeline.trace.inside import (  # noqa: F401  (re-exported: most callers import every record from here)
    LENS_TOP,
    AccountingRecord,
    KVCompareRecord,
    LensRecord,
    MachineInfo,
    ParamCounts,
    PositionRecord,
    SwapRecord,
)
from pipeline.trace.speculative import (  # noqa: F401  (re-exported, as above)
    BonusRecord,
    DraftInfo,
    ProposalRecord,
    ResidualRecord,
    RoundRecord,
    SpeculativeInfo,
    expected_tokens_per_pass,
    speculative_summary,
)
from pipeline.sampling.stages import build_stages

SCHEMA = "llm-pipeline-trace/2"  # what pipeline.trace.files writes
SCHEMA_V1 = "llm-pipeline-trace/1"  # still read (pipeline.trace.v1)
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
    min_p: float = 0.0  # 0: off

    def stages(self, context_ids=()) -> list:
        """The sampling stages these settings make, in order (the one place they are built):
        repetition penalty over `context_ids`, temperature, top-k, top-p, min-p."""
        return build_stages(temperature=self.temperature, top_k=self.top_k, top_p=self.top_p, min_p=self.min_p,
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

    name: str  # "repetition_penalty" | "temperature" | "greedy" | "top_k" | "top_p" | "min_p"
    param: float
    kept: int  # tokens with non-zero probability after the stage
    mass: float  # probability mass (in the distribution entering the stage) of the kept tokens
    probs: np.ndarray  # (N,) distribution after the stage, at the step's `top_ids`


@dataclass(frozen=True)
class RestRecord:
    """The rest of the vocabulary: every token outside a step's `top_ids`, as the temperature stage sees
    it (after the step's repetition penalty), in little room: enough to reshape the distribution at any
    slider position within 1e-3 of the full logits (pipeline.sampling.rest; docs/TRACE_FORMAT.md)."""

    penalty: float  # the repetition penalty these logits are after (1.0: none)
    top: np.ndarray  # (K,) float32 the largest of them, descending, every tie of the last included
    temperatures: np.ndarray  # (G,) float32 the temperatures `lse` and `mean` are at (the page's slider)
    lse: np.ndarray  # (G,) float64 log sum exp(x / t) over the others (every token below `top`)
    mean: np.ndarray  # (G,) float32 the mean of x / t over the others, each weighted by exp(x / t)
    hi: float  # the histogram of the others: bin i holds hi - (i + 1) width < x <= hi - i width
    width: float
    counts: np.ndarray  # (B,) uint16 (uint32 where a bin holds more) tokens per bin; the last also every token further down
    depths: np.ndarray  # (B,) uint8 how far below its bin's top edge the bin's mean logit lies, in 255ths of `width`

    @property
    def size(self) -> int:
        """Tokens it describes: the vocabulary less the step's top candidates."""
        return int(np.size(self.top)) + int(np.sum(self.counts, dtype=np.int64))


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
    # the vocabulary outside top_ids, summarised (pipeline.sampling.rest): what reshapes a step saved without `logits`;
    # None on a generated step, which has its logits: made from them when it is written (pipeline.trace.files)
    rest: RestRecord | None = field(default=None, repr=False)
    batch_rows: int = 1  # how many generations (visitors) its forward pass ran for: `ms` is that pass's (pipeline.batching)


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
