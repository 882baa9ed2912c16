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
    dtype: str
    n_params: int


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
    ms: float  # wall time of the step: forward pass, capture, sampling, record
    stop_reason: str | None = None  # set on the last step
    # Large vectors: always captured; written to JSON only by a full export.
    logits: np.ndarray | None = field(default=None, repr=False)  # (vocab,) raw logits
    embedding: np.ndarray | None = field(default=None, repr=False)  # (d_model,) chosen token's input embedding
    hidden: np.ndarray | None = field(default=None, repr=False)  # (layers+1, d_model) residual at `position`


@dataclass(frozen=True)
class Trace:
    model: ModelInfo
    settings: Settings
    prompt: PromptRecord
    steps: tuple[StepRecord, ...]
    projection: Projection | None = None
    vocab_cloud: VocabCloud | None = None

    @property
    def stop_reason(self) -> str | None:
        return self.steps[-1].stop_reason if self.steps else None

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.steps)


# ---------------------------------------------------------------------------------------
# JSON (de)serialisation


class TraceFormatError(ValueError):
    """The file is not a trace this program can read."""


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
    }
    if s.attention_matrix is not None:
        d["attention_matrix"] = _tril_lists(s.attention_matrix)
    if full:
        for name in ("logits", "embedding", "hidden"):
            if getattr(s, name) is not None:
                d[name] = _f32(getattr(s, name))
    return d


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
        },
        "steps": [_step_to_json(s, full=full) for s in trace.steps],
        "stop_reason": trace.stop_reason,
        "text": trace.text,
    }
    if trace.projection is not None:
        d["projection"] = {"mean": _f32(trace.projection.mean), "components": _f32(trace.projection.components)}
    if trace.vocab_cloud is not None:
        c = trace.vocab_cloud
        d["vocab_cloud"] = {"ids": c.ids.tolist(), "pieces": list(c.pieces), "xy": _f32(c.xy)}
    return d


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
        **opt,
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
        )
        ids, pieces = list(prompt.token_ids), list(prompt.pieces)
        steps = []
        for s in d["steps"]:
            steps.append(_step_from_json(s, tuple(ids), tuple(pieces)))
            ids.append(int(s["token_id"]))
            pieces.append(s["piece"])
        proj = d.get("projection")
        cloud = d.get("vocab_cloud")
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
