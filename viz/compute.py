"""What a step costs: the KV cache's saving (pipeline.inside.KVCompareRecord) and each step's
compute and memory traffic against this machine's measured limits (AccountingRecord).

Every claim in the text is worked out from the record's numbers.
"""
from __future__ import annotations

import html
from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from pipeline.indices import clamp_index
from pipeline.records import AccountingRecord, KVCompareRecord, MachineInfo, ModelInfo, ParamCounts

from . import fmt
from .style import GEN_COLOR, MUTED, NEW_COLOR, PROMPT_COLOR, base_layout, human_bytes, html_piece, plot_piece

_TABLE = "border-collapse:collapse;font-size:13.5px;margin:4px 0"
_TD = "padding:2px 10px;border-bottom:1px solid #e2e8f0;text-align:right"
_TH = "padding:2px 10px;border-bottom:1px solid #cbd5e0;text-align:left;font-weight:600"


def si(n: float, unit: str = "") -> str:
    """1234 -> '1.23 k', 4.5e9 -> '4.5 G' (decimal prefixes, 3 significant digits)."""
    n = float(n)
    if not np.isfinite(n):
        return f"{n} {unit}".strip()
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {prefix}{unit}"
    return (f"{n:.3g} {unit}" if n != int(n) else f"{int(n)} {unit}").strip()


def fmt_ms(ms: float) -> str:
    ms = float(ms)
    if ms >= 100:
        return f"{ms:,.0f} ms"
    if ms >= 1:
        return f"{ms:.3g} ms"
    if ms >= 0.001:
        return f"{ms:.2g} ms" if ms >= 0.01 else f"{ms * 1000:.2g} µs"
    return f"{ms * 1000:.2g} µs"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:,.1f}×" if b else "–"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], cls: str, *, align: str = "right") -> str:
    head = "".join(f"<th style='{_TH}'>{h}</th>" for h in header)
    td = _TD.replace("text-align:right", f"text-align:{align}")
    body = "".join("<tr>" + "".join(f"<td style='{_TH if c == 0 else td}'>{v}</td>" for c, v in enumerate(r)) + "</tr>" for r in rows)
    return f"<table class='{cls}' style='{_TABLE}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# ---------------------------------------------------------------------------------------
# With vs without the KV cache


def kv_compare_figure(kvc: KVCompareRecord, pieces: Sequence[str] | None = None) -> go.Figure:
    """Left: the step's top logits computed without the cache (x) against with it (y): on the
    diagonal when both passes agree. Right: measured milliseconds of both passes.
    `pieces`: the readable pieces of kvc.top_ids, when known (hover)."""
    w = np.asarray(kvc.logits_with, np.float64)  # (n,)
    wo = np.asarray(kvc.logits_without, np.float64)  # (n,)
    ids = np.asarray(kvc.top_ids, np.int64)
    names = [(f"{plot_piece(pieces[k], 20)} · " if pieces is not None and k < len(pieces) else "") + f"id {int(ids[k])}"
             for k in range(ids.size)]
    hover = [f"{names[k]}<br>with cache {w[k]:.4f}<br>without {wo[k]:.4f}<br>difference {w[k] - wo[k]:.2e}" for k in range(ids.size)]
    both = np.concatenate([w, wo]) if ids.size else np.array([0.0, 1.0])
    lo, hi = float(both.min()), float(both.max())
    pad = max(hi - lo, 1e-3) * 0.06
    lo, hi = lo - pad, hi + pad
    traces = [
        go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="same value (diagonal)", line=dict(color=MUTED, dash="dash"),
                   hoverinfo="skip"),
        go.Scatter(x=wo, y=w, mode="markers", name="top candidates", marker=dict(size=9, color=PROMPT_COLOR, opacity=0.8),
                   customdata=hover, hovertemplate="%{customdata}<extra></extra>"),
        go.Bar(x=["with cache", "without cache"], y=[kvc.ms_with, kvc.ms_without], xaxis="x2", yaxis="y2", showlegend=False,
               name="measured ms", marker=dict(color=[GEN_COLOR, MUTED]),
               text=[fmt_ms(kvc.ms_with), fmt_ms(kvc.ms_without)], textposition="outside", cliponaxis=False,
               customdata=[f"{kvc.tokens_with:,} token(s) through the model, {si(kvc.macs_with)} multiply-adds",
                           f"{kvc.tokens_without:,} tokens through the model, {si(kvc.macs_without)} multiply-adds"],
               hovertemplate="%{customdata}<br>%{y:.2f} ms<extra></extra>"),
    ]
    same = "same top token" if kvc.same_argmax else "<b>different top token</b>"
    title = (f"With vs without the KV cache · step {kvc.step}: max |difference| {kvc.max_abs_diff:.2g}, {same}"
             f"<br><sup>without the cache all {kvc.tokens_without:,} tokens are recomputed: "
             f"{_ratio(kvc.macs_without, kvc.macs_with)} the multiply-adds, {_ratio(kvc.ms_without, kvc.ms_with)} the time</sup>")
    sub = dict(xref="paper", yref="paper", y=1.0, yanchor="bottom", showarrow=False, font=dict(size=12))
    layout = base_layout(
        title, height=420, margin=dict(l=70, r=20, t=100, b=60), showlegend=False,
        annotations=[dict(sub, x=0.3, xanchor="center", text="logits of the top candidates"),
                     dict(sub, x=0.85, xanchor="center", text="measured time")],
        xaxis=dict(domain=[0, 0.6], range=[lo, hi], autorange=False, title=dict(text="logit without cache"), anchor="y"),
        yaxis=dict(range=[lo, hi], autorange=False, title=dict(text="logit with cache"), anchor="x"),
        xaxis2=dict(domain=[0.72, 1.0], anchor="y2", type="category"),
        yaxis2=dict(anchor="x2", title=dict(text="milliseconds"), rangemode="tozero",
                    range=[0, max(kvc.ms_with, kvc.ms_without, 1e-3) * 1.2], autorange=False),
    )
    return go.Figure(data=traces, layout=layout)


def kv_compare_html(kvc: KVCompareRecord, pieces: Sequence[str] | None = None) -> str:
    """A table of both passes (tokens, multiply-adds, measured ms) and whether they agree."""
    rows = [
        ["tokens processed", f"{kvc.tokens_with:,}", f"{kvc.tokens_without:,}", _ratio(kvc.tokens_without, kvc.tokens_with)],
        ["multiply-adds", si(kvc.macs_with), si(kvc.macs_without), _ratio(kvc.macs_without, kvc.macs_with)],
        ["measured time", fmt_ms(kvc.ms_with), fmt_ms(kvc.ms_without), _ratio(kvc.ms_without, kvc.ms_with)],
    ]
    table = _table(["", "with cache", "without cache", "without ÷ with"], rows, "kv-compare")
    top = ""
    if pieces is not None and len(pieces) and kvc.argmax_id == int(kvc.top_ids[0]):  # the token they pick, by name
        top = f" (‘{html_piece(pieces[0], 30)}’)"
    agree = (f"Largest |difference| between the two passes' logits over the whole vocabulary: <b>{kvc.max_abs_diff:.2g}</b>; "
             + (f"both pick the <b>same top token</b>{top}." if kvc.same_argmax else "<b>the top token differs</b>."))
    return (f"<div class='kv-compare' style='font-size:14px;line-height:1.5'>{table}"
            f"<p style='margin:2px 0'>{agree}</p></div>")


# ---------------------------------------------------------------------------------------
# Compute and memory accounting


def accounting_figure(records: Sequence[AccountingRecord], step: int) -> go.Figure:
    """Left: arithmetic intensity (flops per byte read) of every step, prefill and decode coloured
    apart, against the machine balance (log scale). Right: measured ms of every step against the
    memory-bound and compute-bound floors (log scale). The step on screen is outlined."""
    recs = list(records)
    x = [r.step for r in recs]
    col = [PROMPT_COLOR if r.phase == "prefill" else GEN_COLOR for r in recs]
    cur = next((r for r in recs if r.step == step), recs[clamp_index(step, len(recs))])
    width = [3 if r.step == cur.step else 0 for r in recs]
    info = [f"step {r.step} ({r.phase}, {fmt.tokens(r.tokens)})" for r in recs]
    balance = cur.machine_balance
    traces = [
        go.Bar(x=x, y=[r.arithmetic_intensity for r in recs], name="arithmetic intensity", showlegend=False,
               marker=dict(color=col, line=dict(width=width, color=NEW_COLOR)), customdata=info,
               hovertemplate="%{customdata}<br>%{y:.3g} flops per byte<extra></extra>"),
        go.Scatter(x=[min(x) - 0.5, max(x) + 0.5], y=[balance, balance], mode="lines", name="machine balance",
                   line=dict(color=NEW_COLOR, dash="dash"), showlegend=False,
                   hovertemplate=f"machine balance: {balance:.3g} flops per byte<extra></extra>"),
        go.Scatter(x=x, y=[r.ms for r in recs], xaxis="x2", yaxis="y2", mode="markers", name="measured",
                   marker=dict(size=[12 if r.step == cur.step else 7 for r in recs], color=col,
                               line=dict(width=[2 if r.step == cur.step else 0 for r in recs], color=NEW_COLOR)),
                   customdata=info, hovertemplate="%{customdata}<br>measured %{y:.3g} ms<extra></extra>"),
        go.Scatter(x=x, y=[r.memory_bound_ms for r in recs], xaxis="x2", yaxis="y2", mode="lines", name="memory floor",
                   line=dict(color="#2f855a", width=2, shape="hvh"),
                   hovertemplate="memory floor: %{y:.3g} ms (bytes read ÷ bandwidth)<extra></extra>"),
        go.Scatter(x=x, y=[r.compute_bound_ms for r in recs], xaxis="x2", yaxis="y2", mode="lines", name="compute floor",
                   line=dict(color="#805ad5", width=2, dash="dot", shape="hvh"),
                   hovertemplate="compute floor: %{y:.3g} ms (flops ÷ matmul speed)<extra></extra>"),
    ]
    n_mem = sum(r.bound == "memory" for r in recs)
    sub = dict(xref="paper", yref="paper", y=1.0, yanchor="bottom", showarrow=False, font=dict(size=12))
    annotations = [
        dict(sub, x=0.2, xanchor="center", text="flops per byte read (blue prefill, orange decode)"),
        dict(sub, x=0.8, xanchor="center", text="milliseconds per step"),
        dict(xref="x domain", yref="y", x=0.98, y=np.log10(balance) if balance > 0 else 0, xanchor="right", yanchor="bottom",
             showarrow=False, text=f"balance {balance:.3g}: above → compute-bound", font=dict(size=11, color=NEW_COLOR)),
    ]
    title = (f"Compute vs memory · step {cur.step} is {cur.bound}-bound"
             f"<br><sup>{n_mem} of {len(recs)} steps are below the machine balance (memory-bound)</sup>")
    xr = [min(x) - 0.5, max(x) + 0.5]
    ai = [r.arithmetic_intensity for r in recs] + [balance]
    ms = [v for r in recs for v in (r.ms, r.memory_bound_ms, r.compute_bound_ms)]
    layout = base_layout(
        title, height=420, margin=dict(l=70, r=20, t=100, b=90), annotations=annotations, bargap=0.2,
        legend=dict(orientation="h", x=0.55, y=-0.18, font=dict(size=12)),
        xaxis=dict(domain=[0, 0.42], anchor="y", range=xr, autorange=False, title=dict(text="step")),
        yaxis=dict(type="log", anchor="x", title=dict(text="flops / byte"), **_log_ticks(ai)),
        xaxis2=dict(domain=[0.58, 1.0], anchor="y2", range=xr, autorange=False, title=dict(text="step")),
        yaxis2=dict(type="log", anchor="x2", title=dict(text="ms"), **_log_ticks(ms)),
    )
    return go.Figure(data=traces, layout=layout)


def _log_ticks(values) -> dict:
    """Only powers of ten as ticks when the values span a decade or more (no crowded minor labels)."""
    v = np.asarray([x for x in values if x > 0 and np.isfinite(x)], np.float64)
    return dict(dtick=1) if v.size and np.log10(v.max() / v.min()) >= 1 else {}


def bound_sentence(rec: AccountingRecord, machine: MachineInfo) -> str:
    """'This step is memory-bound: ...' or '... compute-bound: ...', from the record's numbers."""
    ai, bal = rec.arithmetic_intensity, rec.machine_balance
    floor_mem, floor_cmp = rec.memory_bound_ms, rec.compute_bound_ms
    limits = f"{si(machine.matmul_gflop_s * 1e9, 'FLOP/s')} ÷ {si(machine.memory_gb_s * 1e9, 'B/s')}"
    if rec.bound == "memory":
        s = (f"This step is <b>memory-bound</b>: it does {ai:.3g} flops per byte it reads, at or below this machine's balance of "
             f"{bal:.3g} flops per byte ({limits}), so reading the weights and cache ({fmt_ms(floor_mem)} at full bandwidth) "
             f"takes longer than the arithmetic ({fmt_ms(floor_cmp)}).")
    else:
        s = (f"This step is <b>compute-bound</b>: it does {ai:.3g} flops per byte it reads, above this machine's balance "
             f"of {bal:.3g} flops per byte ({limits}), so the arithmetic ({fmt_ms(floor_cmp)} at full speed) takes longer "
             f"than reading the weights and cache ({fmt_ms(floor_mem)}).")
    floor = max(floor_mem, floor_cmp)
    if floor > 0:
        s += (f" The step's measured {fmt_ms(rec.ms)} (the pass, plus capturing it, sampling and recording) is "
              f"{rec.ms / floor:,.1f}× that floor.")
    return s


def stored_weights_row(model: ModelInfo, params: ParamCounts) -> list[str] | None:
    """'weights as stored': bytes a weight on disk against in memory, from the model record."""
    if not model.weight_bytes or not params.total:
        return None
    bits = 8 * model.weight_bytes / params.total
    mem = params.total * params.bytes_per_param
    return ["weights as stored", f"{human_bytes(model.weight_bytes)} on disk ({bits:.3g} bits a weight: {html.escape(model.weights)}) · "
                                 f"{human_bytes(mem)} in memory ({8 * params.bytes_per_param} bits a weight), "
                                 f"{mem / model.weight_bytes:.2g}× the file"]


def accounting_html(rec: AccountingRecord, machine: MachineInfo, params: ParamCounts, model: ModelInfo | None = None) -> str:
    """One step's arithmetic and memory traffic in a short table, and which limit it hits. With the
    `model` record, also how its weights are stored on disk against in memory (quantisation)."""
    bpp = params.bytes_per_param
    rows = [
        ["tokens processed", f"{rec.tokens:,} ({html.escape(rec.phase)})"],
        ["parameters read", f"{si(rec.params_read)} of {si(params.total)}"
                            + (" (the LM head is the embedding matrix)" if params.tied else "")],
        ["multiply-adds", f"{si(rec.macs)} ({si(2 * rec.macs, 'FLOP')})"],
        ["weights read", f"{human_bytes(rec.weight_bytes)} ({bpp} bytes per parameter)"],
        ["KV cache read", human_bytes(rec.kv_bytes_read)],
        ["arithmetic intensity", f"{rec.arithmetic_intensity:.3g} flops per byte"],
        ["machine balance", f"{rec.machine_balance:.3g} flops per byte "
                            f"({si(machine.matmul_gflop_s * 1e9, 'FLOP/s')}, {si(machine.memory_gb_s * 1e9, 'B/s')}, "
                            f"{machine.threads} threads)"],
        ["memory floor", f"{fmt_ms(rec.memory_bound_ms)} (bytes ÷ bandwidth)"],
        ["compute floor", f"{fmt_ms(rec.compute_bound_ms)} (flops ÷ matmul speed)"],
        ["measured step", f"{fmt_ms(rec.ms)} (the pass, plus capture, sampling and record)"],
    ]
    stored = stored_weights_row(model, params) if model is not None else None
    if stored:
        rows.insert(4, stored)
    table = _table([f"step {rec.step}", ""], rows, "accounting", align="left")
    quant = ""
    if stored and model.weight_bytes < params.total * bpp:
        quant = (f"<p style='margin:2px 0'><i>Quantisation:</i> the file stores each weight in fewer bits than this pipeline "
                 f"computes with, so the probabilities here are those of the quantised model, and each pass reads "
                 f"{params.total * bpp / model.weight_bytes:.2g}× the bytes the file holds. A kernel that computes on the small "
                 "copy directly reads less, and a memory-bound step gets faster by about as much.</p>")
    return (f"<div class='accounting' style='font-size:14px;line-height:1.5'>{table}"
            f"<p style='margin:2px 0'>{bound_sentence(rec, machine)}</p>{quant}</div>")
