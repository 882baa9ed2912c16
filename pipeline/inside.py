"""Inside the model: analyses of one step that need the model itself (its final norm, LM head,
weights, or a second forward pass), as immutable records the viz/ functions draw.

    lens = logit_lens(lm, step)                      # LensRecord: the prediction after every layer
    kvc = kv_compare(lm, trace, step_index)          # KVCompareRecord: the step with and without the cache
    params = param_counts(lm)                        # ParamCounts: parameters by where a pass reads them
    machine = measure_machine()                      # MachineInfo: measured bandwidth and matmul speed (cached)
    acc = accounting(info, params, step, machine)    # AccountingRecord: pure arithmetic
    pos = position_info(lm)                          # PositionRecord: RoPE frequencies or learned positions
    swap = swap_demo(lm, token_ids, i, j)            # SwapRecord: two prompt tokens swapped, attention compared
    trace = with_inside(lm, trace)                   # the trace with lens, params, position and machine

Records hold plain Python / numpy data only, like pipeline.records (they are defined there, so
traces serialise them, and re-exported here).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import statistics
import time
from typing import Sequence

import numpy as np
import torch

from .formulas import kv_cache_bytes
from .capture import run_with_cache
from .loading import LoadedModel
from .records import (
    LENS_TOP,
    AccountingRecord,
    KVCompareRecord,
    LensRecord,
    MachineInfo,
    ModelInfo,
    ParamCounts,
    PositionRecord,
    StepRecord,
    SwapRecord,
    Trace,
)

KV_TOP = 20  # candidates compared by kv_compare
LEARNED_POSITIONS_SHOWN = 256  # learned position vectors projected by position_info

__all__ = [
    "LENS_TOP", "KV_TOP", "LensRecord", "KVCompareRecord", "ParamCounts", "MachineInfo", "AccountingRecord",
    "PositionRecord", "SwapRecord", "final_logits", "logit_lens", "kv_compare", "pass_macs", "param_counts",
    "measure_machine", "accounting", "position_info", "swap_demo", "with_inside",
]


# ---------------------------------------------------------------------------------------
# The logit lens


def _text_config(lm: LoadedModel):
    c = lm.model.config
    return c.get_text_config() if hasattr(c, "get_text_config") else c


def final_logits(lm: LoadedModel, x: torch.Tensor) -> torch.Tensor:
    """The model's own read-out of residual rows x (..., d_model): final norm, LM head, then any
    scaling the model applies after the head (Gemma 2/3 soft-capping, Cohere's logit_scale,
    Granite's logits_scaling), cut to the vocabulary."""
    y = lm.arch.lm_head(lm.arch.norm(x))
    c = _text_config(lm)
    scale = getattr(c, "logit_scale", None)  # Cohere multiplies
    if isinstance(scale, (int, float)) and scale not in (0, 1):
        y = y * scale
    div = getattr(c, "logits_scaling", None)  # Granite divides
    if isinstance(div, (int, float)) and div not in (0, 1):
        y = y / div
    cap = getattr(c, "final_logit_softcapping", None)
    if cap:
        y = torch.tanh(y / cap) * cap
    return y[..., : lm.info.vocab_size]


def _param(lm: LoadedModel) -> torch.Tensor:
    return next(lm.model.parameters())


def logit_lens(lm: LoadedModel, step: StepRecord) -> LensRecord:
    """The final norm and LM head applied to the step's residual stream after every layer.

    Row 0 is the input to block 0 (the embedding), row i the output of block i; row L is the
    model's own prediction (equal to the step's logits)."""
    if step.hidden is None:
        raise ValueError(f"step {step.index} holds no hidden states (a trace exported without --full): the logit lens needs them")
    p = _param(lm)
    h = torch.as_tensor(np.asarray(step.hidden, np.float32)).to(device=p.device, dtype=p.dtype)  # (L+1, d)
    with torch.inference_mode():
        logits = final_logits(lm, h).double()  # (L+1, vocab)
        logp = torch.log_softmax(logits, dim=-1)
        probs = logp.exp()
        k = min(LENS_TOP, logits.shape[-1])
        top_p, top_i = probs.topk(k, dim=-1)  # descending
        chosen = logits[:, step.token_id]
        ranks = (logits > chosen[:, None]).sum(-1)
        entropy = -(probs * logp).nan_to_num().sum(-1) / math.log(2)
    top_ids = top_i.cpu().numpy().astype(np.int64)
    return LensRecord(
        step=step.index,
        position=step.position,
        token_id=int(step.token_id),
        piece=step.piece,
        top_ids=top_ids,
        top_pieces=tuple(tuple(lm.tokens.piece(int(i)) for i in row) for row in top_ids),
        top_probs=top_p.cpu().numpy().astype(np.float32),
        chosen_probs=probs[:, step.token_id].cpu().numpy().astype(np.float32),
        chosen_ranks=ranks.cpu().numpy().astype(np.int64),
        entropy=entropy.cpu().numpy().astype(np.float32),
    )


# ---------------------------------------------------------------------------------------
# Parameters, compute and memory


def pass_macs(params: ParamCounts, info: ModelInfo, tokens_fed: int, context_len: int, logits_rows: int = 1) -> float:
    """Multiply-adds of one forward pass that feeds `tokens_fed` tokens, the last at position
    context_len - 1: every block's and the final norm's weights once per token, the LM head once
    per row of logits the pass computes (`logits_rows`: 1 here, as every pass keeps only the last
    position's logits), plus attention: per layer, n_heads x head_dim x (keys attended, summed over
    the fed queries) for QK^T and as many for the weighted sum of V. Query q (0-based) attends to
    q + 1 keys."""
    n, c = int(tokens_fed), int(context_len)
    keys = n * c - n * (n - 1) // 2  # sum of (q + 1) for q = c - n .. c - 1
    attn = info.n_layers * info.n_heads * info.head_dim * keys * 2
    body = params.read_per_pass - params.lm_head_rows
    return float(body) * n + float(params.lm_head_rows) * min(int(logits_rows), n) + float(attn)


def _numel(mod: torch.nn.Module | None) -> int:
    return 0 if mod is None else sum(p.numel() for p in mod.parameters())


def param_counts(lm: LoadedModel) -> ParamCounts:
    """Parameters by where a forward pass reads them, from the model's own modules (a tied LM
    head counted once, in `embedding`; learned positions in `positions`; block 0's counts stand
    for every block, and anything left over lands in `other`)."""
    model, arch = lm.model, lm.arch
    total = sum(p.numel() for p in model.parameters())  # unique Parameters: a tied matrix once
    embedding = _numel(arch.embed)
    emb_ptrs = {p.data_ptr() for p in arch.embed.parameters()}
    head = list(arch.lm_head.parameters())
    tied = any(p.data_ptr() in emb_ptrs for p in head)
    lm_head = sum(p.numel() for p in head if p.data_ptr() not in emb_ptrs)
    positions = _numel(arch.positions)
    attn, mlp = _numel(arch.attn[0]), _numel(arch.mlp[0])
    norm = _numel(arch.layers[0]) - attn - mlp
    final_norm = _numel(arch.norm)
    n_layers = len(arch.layers)
    placed = embedding + lm_head + positions + n_layers * (attn + mlp + norm) + final_norm
    return ParamCounts(
        total=int(total),
        embedding=int(embedding),
        lm_head=int(lm_head),
        tied=bool(tied),
        per_layer_attn=int(attn),
        per_layer_mlp=int(mlp),
        per_layer_norm=int(norm),
        final_norm=int(final_norm),
        n_layers=n_layers,
        bytes_per_param=int(_param(lm).element_size()),
        positions=int(positions),
        other=int(total - placed),
    )


def measure_machine(lock=None) -> MachineInfo:
    """This machine's limits, measured once per process. `lock`: the model's lock, held while
    measuring, so that no forward pass (another visitor's generation) shares the cores with the
    measurement and makes the machine look slower than it is."""
    if _measure.cache_info().currsize:
        return _measure()
    with lock if lock is not None else contextlib.nullcontext():
        return _measure()


@functools.lru_cache(maxsize=1)
def _measure() -> MachineInfo:
    """The measurement itself (well under 2 s):

    memory bandwidth: the best of a few copies of a 256 MB float32 array (bytes read + written
    over the time); matmul throughput: the best of a few 1024 x 1024 float32 torch matmuls."""
    n = 64 * 1024 * 1024  # 256 MB of float32
    src = np.ones(n, np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # touch every page once
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    gb_s = 2 * src.nbytes / best / 1e9
    del src, dst
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    with torch.inference_mode():
        a @ b  # warm-up
        best_mm = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            a @ b
            best_mm = min(best_mm, time.perf_counter() - t0)
    gflop_s = 2 * 1024**3 / best_mm / 1e9
    return MachineInfo(memory_gb_s=float(gb_s), matmul_gflop_s=float(gflop_s), threads=int(torch.get_num_threads()))


def accounting(info: ModelInfo, params: ParamCounts, step: StepRecord, machine: MachineInfo) -> AccountingRecord:
    """Compute and memory of one step's forward pass, against the machine's measured limits.

    The pass feeds position + 1 tokens at prefill and 1 at decode; it reads every weight once
    whatever the number of tokens, and at decode the K and V of all previous positions
    (prefill reads no cache: it computes every K and V in the pass)."""
    prefill = step.phase == "prefill"
    tokens = step.position + 1 if prefill else 1
    macs = pass_macs(params, info, tokens, step.position + 1)
    bpp = params.bytes_per_param
    weight_bytes = float(params.read_per_pass * bpp)
    previous = 0 if prefill else step.position
    kv_bytes = float(kv_cache_bytes(info, previous, bpp))  # a sliding-window layer reads its window only
    read = weight_bytes + kv_bytes
    intensity = 2 * macs / read
    balance = machine.matmul_gflop_s / machine.memory_gb_s
    return AccountingRecord(
        step=step.index,
        phase=step.phase,
        tokens=tokens,
        params_read=params.read_per_pass,
        macs=macs,
        weight_bytes=weight_bytes,
        kv_bytes_read=kv_bytes,
        arithmetic_intensity=intensity,
        ms=float(step.ms),
        memory_bound_ms=read / (machine.memory_gb_s * 1e9) * 1000.0,
        compute_bound_ms=2 * macs / (machine.matmul_gflop_s * 1e9) * 1000.0,
        machine_balance=balance,
    )


# ---------------------------------------------------------------------------------------
# The KV cache, recomputed


def _find_step(trace: Trace, step_index: int) -> StepRecord:
    for s in trace.steps:
        if s.index == step_index:
            return s
    raise ValueError(f"the trace has no step {step_index} (its steps are {trace.steps[0].index if trace.steps else '-'}"
                     f"..{trace.steps[-1].index if trace.steps else '-'})")


def _median_ms(fn, repeats: int = 3) -> tuple[float, torch.Tensor]:
    """Median of the passes' own times (each timed inside the model's lock), and the last logits."""
    times, out = [], None
    for _ in range(repeats):
        cap = fn()
        times.append(cap.ms)
        out = cap["logits"][0, -1]
    return statistics.median(times), out


def kv_compare(lm: LoadedModel, trace: Trace, step_index: int) -> KVCompareRecord:
    """Recompute step `step_index` (its StepRecord.index) twice: without a cache (one pass over
    the whole context up to the step's position) and with one (the context but its last token
    prefilled into a DynamicCache, untimed, then one timed pass of the last token; for a prefill
    step, the step's own single pass over the prompt with a fresh cache). Times are the median of
    3 runs, now, on this machine."""
    from transformers import DynamicCache

    step = _find_step(trace, step_index)
    ids = list(step.context_ids)[: step.position + 1]
    V = lm.info.vocab_size
    prefill = step.phase == "prefill"

    def without():
        return run_with_cache(lm, ids, hooks=False)

    if prefill:
        def with_cache():
            return run_with_cache(lm, ids, cache=DynamicCache(config=lm.model.config), hooks=False)
    else:
        cache = DynamicCache(config=lm.model.config)
        run_with_cache(lm, ids[:-1], cache=cache, hooks=False)  # the context but its last token, untimed

        def with_cache():
            cap = run_with_cache(lm, ids[-1:], cache=cache, hooks=False)
            cache.crop(-1)  # back to the prefilled context for the next repeat
            return cap

    ms_without, lo_without = _median_ms(without)
    ms_with, lo_with = _median_ms(with_cache)
    lw, lwo = lo_with[:V].float().cpu().numpy(), lo_without[:V].float().cpu().numpy()
    T = step.position + 1
    tokens_with = T if prefill else 1
    params = param_counts(lm)
    top = np.asarray(step.top_ids[:KV_TOP], np.int64)
    return KVCompareRecord(
        step=step.index,
        position=step.position,
        tokens_with=tokens_with,
        tokens_without=T,
        macs_with=pass_macs(params, lm.info, tokens_with, T),
        macs_without=pass_macs(params, lm.info, T, T),
        ms_with=float(ms_with),
        ms_without=float(ms_without),
        max_abs_diff=float(np.abs(lw.astype(np.float64) - lwo).max()),
        same_argmax=bool(int(lw.argmax()) == int(lwo.argmax())),
        top_ids=top,
        logits_with=lw[top].astype(np.float32),
        logits_without=lwo[top].astype(np.float32),
        argmax_id=int(lw.argmax()),
    )


# ---------------------------------------------------------------------------------------
# Positions


def _rope_config(lm: LoadedModel) -> tuple[float | None, float]:
    """(rope_theta, partial_rotary_factor) from the config (transformers 5 rope_parameters, or older keys)."""
    c = _text_config(lm)
    rp = getattr(c, "rope_parameters", None)
    rp = rp if isinstance(rp, dict) else {}
    if rp and not ("rope_theta" in rp or "rope_type" in rp):  # per layer type (Gemma 3): take the first
        rp = next((v for v in rp.values() if isinstance(v, dict)), {})
    theta = rp.get("rope_theta", getattr(c, "rope_theta", None))
    factor = rp.get("partial_rotary_factor", getattr(c, "partial_rotary_factor", None))
    return (None if theta is None else float(theta)), float(factor if factor is not None else 1.0)


def position_info(lm: LoadedModel) -> PositionRecord:
    """How the model knows order: rotary embeddings (the inverse frequencies of the model's own
    rotary module, or computed from the config), learned position vectors (GPT-2's wpe, the
    first 256 in the model's fixed embedding projection), or neither."""
    theta, factor = _rope_config(lm)
    buf = None
    for name, b in lm.model.named_buffers():
        if name.split(".")[-1] == "inv_freq":
            buf = b
            break
    if buf is not None:
        inv = buf.detach().float().cpu().numpy().astype(np.float32)
        return PositionRecord("rope", theta, int(2 * inv.size), inv, None)
    if theta is not None:
        dim = int(lm.info.head_dim * factor)
        inv = (1.0 / theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim)).astype(np.float32)
        return PositionRecord("rope", theta, dim, inv, None)
    if lm.arch.positions is not None:
        w = lm.arch.positions.weight
        n = min(lm.info.context_length, LEARNED_POSITIONS_SHOWN, w.shape[0])
        with torch.inference_mode():
            xy = lm.projection.apply(w[:n].detach().float().cpu().numpy())
        return PositionRecord("learned", None, None, None, xy)
    return PositionRecord("none", None, None, None, None)


# ---------------------------------------------------------------------------------------
# Swapping two tokens


def _last_query_attention(lm: LoadedModel, ids: list[int]) -> tuple[np.ndarray, int]:
    """(L, T) attention of the last query (mean of heads) per layer, and the top next token."""
    cap = run_with_cache(lm, ids)
    L = len(lm.arch.layers)
    att = torch.stack([cap[f"blocks.{l}.attn.pattern"][0, :, -1, :].float().mean(0) for l in range(L)])
    top = int(cap["logits"][0, -1, : lm.info.vocab_size].argmax())
    return att.cpu().numpy().astype(np.float32), top


def swap_demo(lm: LoadedModel, token_ids: Sequence[int] | str, i: int, j: int) -> SwapRecord:
    """Two prefill passes, the prompt as is and with tokens i and j swapped: the attention of the
    last query (mean of heads) in every layer, the swapped run's keys put back in the original
    order (column i of the swapped run's picture is the token originally at i, which sat at j).
    A model blind to order would give identical pictures; swapping two equal tokens changes
    nothing (diff 0). A string is tokenised as plain text."""
    ids = lm.tokens.plain_ids(token_ids) if isinstance(token_ids, str) else [int(t) for t in token_ids]
    T = len(ids)
    if T < 2:
        raise ValueError(f"swapping needs a prompt of at least 2 tokens, not {T}")
    if T >= lm.info.context_length:
        raise ValueError(f"the prompt is {T} tokens but the model's context window holds {lm.info.context_length}")
    for name, v in (("i", i), ("j", j)):
        if int(v) != v or not 0 <= v < T:
            raise ValueError(f"token position {name}={v} is outside the prompt: pick a whole number from 0 to {T - 1}")
    i, j = int(i), int(j)
    if i == j:
        raise ValueError(f"i and j are both {i}: pick two different token positions to swap")
    swapped = list(ids)
    swapped[i], swapped[j] = ids[j], ids[i]
    att, top = _last_query_attention(lm, ids)
    att_sw, top_sw = _last_query_attention(lm, swapped)
    perm = list(range(T))
    if ids[i] != ids[j]:  # equal tokens: the swap moves nothing (the runs are the same), so nothing to put back
        perm[i], perm[j] = j, i
    att_sw = att_sw[:, perm]
    return SwapRecord(
        pieces=tuple(lm.tokens.pieces(ids)),
        swapped_pieces=tuple(lm.tokens.pieces(swapped)),
        i=i,
        j=j,
        attention=att,
        attention_swapped=att_sw,
        max_abs_diff=float(np.abs(att - att_sw).max()),
        top_piece=lm.tokens.piece(top),
        top_piece_swapped=lm.tokens.piece(top_sw),
    )


# ---------------------------------------------------------------------------------------
# A trace for export


def trace_extras(lm: LoadedModel) -> dict:
    """What every trace of this model carries besides its steps (cheap: about 2 ms): parameter
    counts, position scheme, residual projection."""
    return dict(params=param_counts(lm), position=position_info(lm), resid_projection=lm.resid_projection)


def with_inside(lm: LoadedModel, trace: Trace, steps: Sequence[int] | None = None) -> Trace:
    """The trace with the logit lens of `steps` (StepRecord.index values; default: every step
    that holds hidden states), the model's parameter counts and position scheme, this machine's
    measured limits, and the residual projection. Lens records of other steps already in the
    trace are kept."""
    by_index = {s.index: s for s in trace.steps}
    wanted = [s.index for s in trace.steps if s.hidden is not None] if steps is None else [int(k) for k in steps]
    for k in wanted:
        if k not in by_index:
            raise ValueError(f"the trace has no step {k}")
    fresh = {k: logit_lens(lm, by_index[k]) for k in wanted}
    kept = {r.step: r for r in trace.lens if r.step not in fresh}
    lens = tuple(sorted({**kept, **fresh}.values(), key=lambda r: r.step))
    extras = trace_extras(lm)
    if trace.resid_projection is not None:  # the map its steps' paths were drawn in
        extras["resid_projection"] = trace.resid_projection
    return dataclasses.replace(trace, lens=lens, machine=measure_machine(lm.lock), **extras)
