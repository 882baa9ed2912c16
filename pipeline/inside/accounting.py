"""Parameters, compute and memory: what a forward pass reads and computes, against this machine's
measured limits.

    params = param_counts(lm)                        # ParamCounts: parameters by where a pass reads them
    machine = measure_machine()                      # MachineInfo: measured bandwidth and matmul speed (cached)
    acc = accounting(info, params, step, machine)    # AccountingRecord: pure arithmetic
    macs = pass_macs(params, info, tokens_fed, context_len)
"""
from __future__ import annotations

import contextlib
import functools
import time

import numpy as np
import torch

from pipeline.formulas import kv_cache_bytes
from pipeline.loading import LoadedModel
from pipeline.trace.records import AccountingRecord, MachineInfo, ModelInfo, ParamCounts, StepRecord


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
        bytes_per_param=int(next(model.parameters()).element_size()),
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
    """The measurement itself (a few copies and matmuls, once per process):

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
        batch_rows=step.batch_rows,
    )
