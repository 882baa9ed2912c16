"""What a step costs: the KV cache's saving (pipeline.inside.KVCompareRecord) and each step's
compute and memory traffic against this machine's measured limits (AccountingRecord).

Every claim in the text is worked out from the record's numbers, and written in the catalogue's words (compute.*:
locales/en.json, viz.text).
"""
from __future__ import annotations

import html
from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from pipeline.indices import clamp_index
from pipeline.trace.records import AccountingRecord, KVCompareRecord, MachineInfo, ModelInfo, ParamCounts

from viz import fmt
from viz.style import GEN_COLOR, MUTED, NEW_COLOR, PROMPT_COLOR, base_layout, human_bytes, html_piece, plot_piece
from viz.text import count, decimal, number_marks, t, t_html, thousands

_TABLE = "border-collapse:collapse;font-size:13.5px;margin:4px 0"
_TD = "padding:2px 10px;border-bottom:1px solid #e2e8f0;text-align:right"
_TH = "padding:2px 10px;border-bottom:1px solid #cbd5e0;text-align:left;font-weight:600"


def sig(x: float, digits: int = 3) -> str:
    """x to `digits` significant digits, as f"{x:.3g}" writes it, with the language's decimal mark (0.5; French 0,5)."""
    return f"{float(x):.{digits}g}".replace(".", number_marks()[1])


def si(n: float, unit: str = "") -> str:
    """1234 -> '1.23 k', 4.5e9 -> '4.5 G' (decimal prefixes, 3 significant digits; the language's decimal mark)."""
    n = float(n)
    if not np.isfinite(n):
        return f"{n} {unit}".strip()
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{sig(n / scale)} {prefix}{unit}"
    return (f"{sig(n)} {unit}" if n != int(n) else f"{int(n)} {unit}").strip()


def fmt_ms(ms: float) -> str:
    ms = float(ms)
    if ms >= 100:
        return f"{decimal(ms, 0)} ms"
    if ms >= 1:
        return f"{sig(ms)} ms"
    if ms >= 0.001:
        return f"{sig(ms, 2)} ms" if ms >= 0.01 else f"{sig(ms * 1000, 2)} µs"
    return f"{sig(ms * 1000, 2)} µs"


def _ratio(a: float, b: float) -> str:
    return f"{decimal(a / b, 1)}×" if b else "–"


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
    hover = ["<br>".join((names[k], t_html("compute.hover_with", x=decimal(w[k], 4)), t_html("compute.hover_without", x=decimal(wo[k], 4)),
                          t_html("compute.hover_difference", x=f"{w[k] - wo[k]:.2e}".replace(".", number_marks()[1]))))
             for k in range(ids.size)]
    both = np.concatenate([w, wo]) if ids.size else np.array([0.0, 1.0])
    lo, hi = float(both.min()), float(both.max())
    pad = max(hi - lo, 1e-3) * 0.06
    lo, hi = lo - pad, hi + pad
    traces = [
        go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="same value (diagonal)", line=dict(color=MUTED, dash="dash"),
                   hoverinfo="skip"),
        go.Scatter(x=wo, y=w, mode="markers", name="top candidates", marker=dict(size=9, color=PROMPT_COLOR, opacity=0.8),
                   customdata=hover, hovertemplate="%{customdata}<extra></extra>"),
        go.Bar(x=[t("compute.with_cache"), t("compute.without_cache")], y=[kvc.ms_with, kvc.ms_without], xaxis="x2", yaxis="y2",
               showlegend=False, name="measured ms", marker=dict(color=[GEN_COLOR, MUTED]),
               text=[fmt_ms(kvc.ms_with), fmt_ms(kvc.ms_without)], textposition="outside", cliponaxis=False,
               customdata=[t_html("compute.through", tokens=count(kvc.tokens_with, "token"), macs=si(kvc.macs_with)),
                           t_html("compute.through", tokens=count(kvc.tokens_without, "token"), macs=si(kvc.macs_without))],
               hovertemplate="%{customdata}<br>%{y:.2f} ms<extra></extra>"),
    ]
    same = t_html("compute.same_top") if kvc.same_argmax else f"<b>{t_html('compute.different_top')}</b>"
    title = (t_html("compute.kv_title", step=kvc.step, diff=sig(kvc.max_abs_diff, 2), same=same)
             + "<br><sup>" + t_html("compute.kv_subtitle", n=thousands(kvc.tokens_without), macs=_ratio(kvc.macs_without, kvc.macs_with),
                                    time=_ratio(kvc.ms_without, kvc.ms_with)) + "</sup>")
    sub = dict(xref="paper", yref="paper", y=1.0, yanchor="bottom", showarrow=False, font=dict(size=12))
    layout = base_layout(
        title, height=420, margin=dict(l=70, r=20, t=100, b=60), showlegend=False,
        annotations=[dict(sub, x=0.3, xanchor="center", text=t_html("compute.top_logits")),
                     dict(sub, x=0.85, xanchor="center", text=t_html("compute.measured_time"))],
        xaxis=dict(domain=[0, 0.6], range=[lo, hi], autorange=False, title=dict(text=t_html("compute.logit_without")), anchor="y"),
        yaxis=dict(range=[lo, hi], autorange=False, title=dict(text=t_html("compute.logit_with")), anchor="x"),
        xaxis2=dict(domain=[0.72, 1.0], anchor="y2", type="category"),
        yaxis2=dict(anchor="x2", title=dict(text=t_html("kv.milliseconds")), rangemode="tozero",
                    range=[0, max(kvc.ms_with, kvc.ms_without, 1e-3) * 1.2], autorange=False),
    )
    return go.Figure(data=traces, layout=layout)


def kv_compare_html(kvc: KVCompareRecord, pieces: Sequence[str] | None = None) -> str:
    """A table of both passes (tokens, multiply-adds, measured ms) and whether they agree."""
    rows = [
        [t_html("compute.tokens_processed"), thousands(kvc.tokens_with), thousands(kvc.tokens_without), _ratio(kvc.tokens_without, kvc.tokens_with)],
        [t_html("compute.multiply_adds"), si(kvc.macs_with), si(kvc.macs_without), _ratio(kvc.macs_without, kvc.macs_with)],
        [t_html("compute.measured_time"), fmt_ms(kvc.ms_with), fmt_ms(kvc.ms_without), _ratio(kvc.ms_without, kvc.ms_with)],
    ]
    table = _table(["", t_html("compute.with_cache"), t_html("compute.without_cache"), t_html("compute.without_over_with")], rows, "kv-compare")
    top = ""
    if pieces is not None and len(pieces) and kvc.argmax_id == int(kvc.top_ids[0]):  # the token they pick, by name
        top = " (" + t_html("common.quote", text=html_piece(pieces[0], 30)) + ")"
    diff = f"<b>{sig(kvc.max_abs_diff, 2)}</b>"
    agree = (t_html("compute.agree_same", diff=diff, same=f"<b>{t_html('compute.same_top')}</b>", top=top) if kvc.same_argmax else
             t_html("compute.agree_differs", diff=diff, differs=f"<b>{t_html('compute.top_differs')}</b>"))
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
    info = [t_html("compute.step_info", step=r.step, phase=html.escape(fmt.phase(r.phase)), tokens=fmt.tokens(r.tokens)) for r in recs]
    balance = cur.machine_balance
    traces = [
        go.Bar(x=x, y=[r.arithmetic_intensity for r in recs], name=t("compute.intensity"), showlegend=False,
               marker=dict(color=col, line=dict(width=width, color=NEW_COLOR)), customdata=info,
               hovertemplate="%{customdata}<br>" + t_html("compute.flops_per_byte", x="%{y:.3g}") + "<extra></extra>"),
        go.Scatter(x=[min(x) - 0.5, max(x) + 0.5], y=[balance, balance], mode="lines", name=t("compute.balance"),
                   line=dict(color=NEW_COLOR, dash="dash"), showlegend=False,
                   hovertemplate=t_html("compute.balance_hover", x=sig(balance)) + "<extra></extra>"),
        go.Scatter(x=x, y=[r.ms for r in recs], xaxis="x2", yaxis="y2", mode="markers", name=t("kv.measured"),
                   marker=dict(size=[12 if r.step == cur.step else 7 for r in recs], color=col,
                               line=dict(width=[2 if r.step == cur.step else 0 for r in recs], color=NEW_COLOR)),
                   customdata=info, hovertemplate="%{customdata}<br>" + t_html("compute.measured_hover", ms="%{y:.3g}") + "<extra></extra>"),
        go.Scatter(x=x, y=[r.memory_bound_ms for r in recs], xaxis="x2", yaxis="y2", mode="lines", name=t("compute.memory_floor"),
                   line=dict(color="#2f855a", width=2, shape="hvh"),
                   hovertemplate=t_html("compute.memory_floor_hover", ms="%{y:.3g}") + "<extra></extra>"),
        go.Scatter(x=x, y=[r.compute_bound_ms for r in recs], xaxis="x2", yaxis="y2", mode="lines", name=t("compute.compute_floor"),
                   line=dict(color="#805ad5", width=2, dash="dot", shape="hvh"),
                   hovertemplate=t_html("compute.compute_floor_hover", ms="%{y:.3g}") + "<extra></extra>"),
    ]
    n_mem = sum(r.bound == "memory" for r in recs)
    sub = dict(xref="paper", yref="paper", y=1.0, yanchor="bottom", showarrow=False, font=dict(size=12))
    annotations = [
        dict(sub, x=0.2, xanchor="center", text=t_html("compute.intensity_title")),
        dict(sub, x=0.8, xanchor="center", text=t_html("compute.ms_per_step")),
        dict(xref="x domain", yref="y", x=0.98, y=np.log10(balance) if balance > 0 else 0, xanchor="right", yanchor="bottom",
             showarrow=False, text=t_html("compute.balance_line", x=sig(balance)), font=dict(size=11, color=NEW_COLOR)),
    ]
    title = ((t_html("compute.title_memory", step=cur.step) if cur.bound == "memory" else t_html("compute.title_compute", step=cur.step))
             + "<br><sup>" + t_html("compute.subtitle", n=n_mem, steps=len(recs)) + "</sup>")
    xr = [min(x) - 0.5, max(x) + 0.5]
    ai = [r.arithmetic_intensity for r in recs] + [balance]
    ms = [v for r in recs for v in (r.ms, r.memory_bound_ms, r.compute_bound_ms)]
    layout = base_layout(
        title, height=420, margin=dict(l=70, r=20, t=100, b=90), annotations=annotations, bargap=0.2,
        legend=dict(orientation="h", x=0.55, y=-0.18, font=dict(size=12)),
        xaxis=dict(domain=[0, 0.42], anchor="y", range=xr, autorange=False, title=dict(text=t_html("kv.step"))),
        yaxis=dict(type="log", anchor="x", title=dict(text=t_html("compute.flops_over_byte")), **_log_ticks(ai)),
        xaxis2=dict(domain=[0.58, 1.0], anchor="y2", range=xr, autorange=False, title=dict(text=t_html("kv.step"))),
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
    numbers = dict(ai=sig(ai), balance=sig(bal), limits=limits, memory=fmt_ms(floor_mem), compute=fmt_ms(floor_cmp))
    if rec.bound == "memory":
        s = t_html("compute.memory_bound", bound=f"<b>{t_html('compute.memory_bound_word')}</b>", **numbers)
    else:
        s = t_html("compute.compute_bound", bound=f"<b>{t_html('compute.compute_bound_word')}</b>", **numbers)
    floor = max(floor_mem, floor_cmp)
    if floor > 0 and rec.batch_rows > 1:  # one pass made every visitor's token: the floor is one token's
        each = rec.ms / rec.batch_rows
        s += " " + t_html("compute.measured_floor_batched", ms=fmt_ms(rec.ms), rows=thousands(rec.batch_rows), each=fmt_ms(each),
                          ratio=decimal(each / floor, 1))
    elif floor > 0:
        s += " " + t_html("compute.measured_floor", ms=fmt_ms(rec.ms), ratio=decimal(rec.ms / floor, 1))
    return s


def stored_weights_row(model: ModelInfo, params: ParamCounts) -> list[str] | None:
    """'weights as stored': bytes a weight on disk against in memory, from the model record."""
    if not model.weight_bytes or not params.total:
        return None
    bits = 8 * model.weight_bytes / params.total
    mem = params.total * params.bytes_per_param
    return [t_html("compute.stored"), t_html("compute.stored_value", disk=human_bytes(model.weight_bytes), bits=sig(bits),
                                             weights=html.escape(model.weights), memory=human_bytes(mem), bits_memory=8 * params.bytes_per_param,
                                             ratio=sig(mem / model.weight_bytes, 2))]


def accounting_html(rec: AccountingRecord, machine: MachineInfo, params: ParamCounts, model: ModelInfo | None = None) -> str:
    """One step's arithmetic and memory traffic in a short table, and which limit it hits. With the
    `model` record, also how its weights are stored on disk against in memory (quantisation)."""
    bpp = params.bytes_per_param
    read = t_html("compute.params_read_value", read=si(rec.params_read), total=si(params.total))
    rows = [
        [t_html("compute.tokens_processed"), f"{thousands(rec.tokens)} ({html.escape(fmt.phase(rec.phase))})"],
        [t_html("compute.params_read"), t_html("compute.params_read_tied", read=read) if params.tied else read],
        [t_html("compute.multiply_adds"), f"{si(rec.macs)} ({si(2 * rec.macs, 'FLOP')})"],
        [t_html("compute.weights_read"), t_html("compute.weights_read_value", bytes=human_bytes(rec.weight_bytes), n=bpp)],
        [t_html("compute.kv_read"), human_bytes(rec.kv_bytes_read)],
        [t_html("compute.intensity"), t_html("compute.flops_per_byte", x=sig(rec.arithmetic_intensity))],
        [t_html("compute.balance"), t_html("compute.balance_value", x=sig(rec.machine_balance), matmul=si(machine.matmul_gflop_s * 1e9, "FLOP/s"),
                                           bandwidth=si(machine.memory_gb_s * 1e9, "B/s"), threads=machine.threads)],
        [t_html("compute.memory_floor"), t_html("compute.memory_floor_value", ms=fmt_ms(rec.memory_bound_ms))],
        [t_html("compute.compute_floor"), t_html("compute.compute_floor_value", ms=fmt_ms(rec.compute_bound_ms))],
        [t_html("compute.measured_step"), t_html("compute.measured_step_value", ms=fmt_ms(rec.ms)) if rec.batch_rows <= 1 else
         t_html("compute.measured_step_batched", ms=fmt_ms(rec.ms), rows=thousands(rec.batch_rows), others=thousands(rec.batch_rows - 1))],
    ]
    stored = stored_weights_row(model, params) if model is not None else None
    if stored:
        rows.insert(4, stored)
    table = _table([t_html("compute.step_n", step=rec.step), ""], rows, "accounting", align="left")
    quant = ""
    if stored and model.weight_bytes < params.total * bpp:
        quant = ("<p style='margin:2px 0'>" + t_html("compute.quantised", label=f"<i>{t_html('compute.quantisation')}</i>",
                                                      ratio=sig(params.total * bpp / model.weight_bytes, 2)) + "</p>")
    return (f"<div class='accounting' style='font-size:14px;line-height:1.5'>{table}"
            f"<p style='margin:2px 0'>{bound_sentence(rec, machine)}</p>{quant}</div>")
