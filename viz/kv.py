"""The KV cache's size step by step (measured and by formula) and each step's wall time."""
from __future__ import annotations

import html
from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from pipeline.formulas import kv_positions
from pipeline.trace.records import ModelInfo, RoundRecord, StepRecord

from viz import fmt
from viz.speculative import round_of_step
from viz.style import GEN_COLOR, NEW_COLOR, PROMPT_COLOR, base_layout, human_bytes
from viz.text import count, decimal, t, t_html, thousands


def bytes_per_value(step: StepRecord, model: ModelInfo) -> float:
    """Bytes per cached number, read back from the recorded formula value."""
    per_pos = 2 * model.n_kv_heads * model.head_dim * sum(kv_positions(model, step.position + 1))
    return step.kv_cache_bytes_formula / per_pos if per_pos else float("nan")


def timing_stats(steps: Sequence[StepRecord]) -> dict:
    """Prefill time and tokens (the first prefill step), decode median ms/token and tokens/s."""
    pre = next((s for s in steps if s.phase == "prefill"), None)
    dec = [s.ms for s in steps if s.phase == "decode"]
    med = float(np.median(dec)) if dec else None
    return dict(
        prefill_ms=pre.ms if pre else None, prefill_tokens=pre.position + 1 if pre else None,
        decode_median_ms=med, decode_tokens_per_s=1000.0 / med if med else None, n_decode=len(dec),
    )


BARGAP = 0.15  # between the timing bars


def _round_timing(rounds: Sequence[RoundRecord], cur: StepRecord) -> tuple[list, list, dict]:
    """A speculative trace's time, per round: draft and verify stacked (its steps came k + 1 at a time,
    so a per-step 'prefill' / 'decode' time would not be true of them)."""
    x = [r.index for r in rounds]
    on_screen = round_of_step(rounds, cur.index)
    on = [r is on_screen for r in rounds]
    words = [t("kv.round_hover", round=r.index, draft=decimal(r.draft_ms, 1), verify=decimal(r.target_ms, 1),
               fed=fmt.tokens(r.target_tokens_fed), tokens=fmt.tokens(len(r.token_ids)), first=r.first_step,
               last=r.first_step + len(r.token_ids) - 1) for r in rounds]
    draft, verify = t("kv.draft"), t("kv.verify")
    line = dict(width=[2.5 if o else 0 for o in on], color=NEW_COLOR)
    bars = [
        dict(type="bar", x=x, y=[r.draft_ms for r in rounds], name=draft, xaxis="x2", yaxis="y2", marker=dict(color="#2f9e5b", line=line),
             customdata=words, hovertemplate="%{customdata}<extra>" + draft + "</extra>"),
        dict(type="bar", x=x, y=[r.target_ms for r in rounds], name=t("kv.verify_name"), xaxis="x2", yaxis="y2",
             marker=dict(color=GEN_COLOR, line=line), customdata=words, hovertemplate="%{customdata}<extra>" + verify + "</extra>"),
    ]
    later = [r for r in rounds if r.index > 0]  # round 0's verify pass also reads the prompt
    notes = []
    if later:
        tok = sum(len(r.token_ids) for r in later)
        notes.append(t("kv.after_round0", draft=decimal(np.median([r.draft_ms for r in later]), 1),
                       verify=decimal(np.median([r.target_ms for r in later]), 0), tokens=decimal(tok / len(later), 2)))
    r0 = rounds[0]
    notes.insert(0, t("kv.round0", verify=decimal(r0.target_ms, 0), fed=fmt.tokens(r0.target_tokens_fed)))
    return bars, notes, dict(range=[min(x) - 0.5, max(x) + 0.5], autorange=False, title=dict(text=t("kv.round")))


def kv_timing_figure(*, steps: Sequence[StepRecord], step: int, model: ModelInfo, rounds: Sequence[RoundRecord] = ()) -> go.Figure:
    """kv_timing_figure_dict's figure, checked by Plotly."""
    return go.Figure(kv_timing_figure_dict(steps=steps, step=step, model=model, rounds=rounds))


def _cache_traces(steps: list[StepRecord], model: ModelInfo, rounds: Sequence[RoundRecord]) -> list[dict]:
    """The cache size after each step, measured and by formula, on axes x / y, and the legend entry of
    the step on screen."""
    x = [s.index for s in steps]
    made_by = [round_of_step(rounds, s.index) for s in steps]
    per_layer = [t("kv.cached", step=s.index, made=fmt.phase(s.phase) if r is None else t("kv.round_n", round=r.index),
                   positions=thousands(s.position + 1)) + "<br>"
                 + t("kv.measured_layers", bytes=human_bytes(s.kv_cache_bytes), per_layer=human_bytes(s.kv_cache_bytes / model.n_layers),
                     layers=model.n_layers)
                 for s, r in zip(steps, made_by)]
    measured, formula = t("kv.measured"), t("kv.formula")
    return [
        dict(type="scatter", x=x, y=[s.kv_cache_bytes for s in steps], mode="lines+markers", name=t("kv.measured_name"),
             line=dict(color=PROMPT_COLOR, width=2), marker=dict(size=5), customdata=per_layer,
             hovertemplate="%{customdata}<br>" + t("kv.n_bytes", n="%{y:,}") + "<extra>" + measured + "</extra>"),
        dict(type="scatter", x=x, y=[s.kv_cache_bytes_formula for s in steps], mode="lines", name=formula,
             line=dict(color=GEN_COLOR, width=2, dash="dot"),
             hovertemplate=t("kv.formula_hover", n="%{y:,}") + "<extra>" + t("kv.formula_terms") + "</extra>"),
        # the step on screen: a legend entry here; its ring and its bar's outline are shapes, so a step
        # changes only shapes, which Plotly redraws alone (a moved point or outline redraws the figure)
        dict(type="scatter", x=[None], y=[None], mode="markers", name=t("kv.on_screen"), hoverinfo="skip",
             marker=dict(size=13, color=NEW_COLOR, symbol="circle-open", line=dict(width=3))),
    ]


def _step_timing(steps: list[StepRecord], cur: StepRecord) -> tuple[list, list, dict]:
    """A plain trace's time, per step: the prefill bar coloured apart from the decode bars, the step on
    screen's bar outlined (a shape, as the ring)."""
    bar = dict(type="bar", x=[s.index for s in steps], y=[s.ms for s in steps], name=t("kv.ms_per_step"), xaxis="x2", yaxis="y2",
               showlegend=False, marker=dict(color=[PROMPT_COLOR if s.phase == "prefill" else GEN_COLOR for s in steps]),
               customdata=[t("kv.step_fed", step=s.index, phase=fmt.phase(s.phase), fed=fmt.tokens((s.position + 1) if s.phase == "prefill" else 1))
                           for s in steps],
               hovertemplate="%{customdata}<br>%{y:.1f} ms<extra></extra>")
    st = timing_stats(steps)
    notes = []
    if st["prefill_ms"] is not None:
        notes.append(t("kv.prefill_note", ms=decimal(st["prefill_ms"], 0), tokens=fmt.tokens(st["prefill_tokens"])))
    if st["decode_median_ms"] is not None:
        notes.append(t("kv.decode_note", ms=decimal(st["decode_median_ms"], 1), rate=decimal(st["decode_tokens_per_s"], 1)))
    half = (1 - BARGAP) / 2
    outline = dict(type="rect", name="step on screen", xref="x2", yref="y2", x0=cur.index - half, x1=cur.index + half,
                   y0=0, y1=cur.ms, line=dict(color=NEW_COLOR, width=2.5))
    return [bar], notes, outline


NOTE_LINE_PX, TIME_PANEL_PX = 16, 200  # (a note's line of 12 px type; the timing panel's plot height: 220 px as drawn on a
# laptop, taken a little smaller so the notes' last line keeps clear of the tallest bar)


def _headroom(notes: list[str]) -> float:
    """The timing axis's top as a multiple of the tallest bar: room above the bars for the notes in the panel's corner
    (they lay over the tallest bars). A phone that wraps them in more lines raises it as much (assets/viewer_phone.js)."""
    need = NOTE_LINE_PX * len(notes) + 16 if notes else 0
    return max(1.12, TIME_PANEL_PX / (TIME_PANEL_PX - need))


def _annotations(time_title: str, notes: list[str]) -> list[dict]:
    """Both panels' titles, and the timing's figures in words in the timing panel's corner."""
    sub = dict(xref="paper", yref="paper", y=1.0, yanchor="bottom", showarrow=False, font=dict(size=13))
    annotations = [dict(sub, x=0.22, xanchor="center", text=t("kv.cache_title")),
                   dict(sub, x=0.78, xanchor="center", text=time_title)]
    if notes:
        annotations.append(dict(xref="x2 domain", yref="y2 domain", x=0.98, y=0.98, xanchor="right", yanchor="top", showarrow=False,
                                align="right", text="<br>".join(notes), font=dict(size=12), bgcolor="rgba(255,255,255,0.85)"))
    return annotations


def kv_timing_figure_dict(*, steps: Sequence[StepRecord], step: int, model: ModelInfo, rounds: Sequence[RoundRecord] = ()) -> dict:
    """Left: KV cache bytes after each step, measured and by formula, the step on screen marked.
    Right: milliseconds per step, the prefill bar coloured apart from the decode bars; for a
    speculative trace (`rounds`), milliseconds per round, draft and verify stacked."""
    steps = list(steps)
    x = [s.index for s in steps]
    cur = steps[step]
    xa = dict(range=[min(x) - 0.5, max(x) + 0.5], autorange=False, title=dict(text=t("kv.step")))
    shapes = [dict(type="circle", name="step on screen", xref="x", yref="y", xsizemode="pixel", ysizemode="pixel",
                   xanchor=cur.index, yanchor=cur.kv_cache_bytes, x0=-6.5, x1=6.5, y0=-6.5, y1=6.5, line=dict(color=NEW_COLOR, width=3))]
    if rounds:  # timing, on axes x2 / y2: per round
        bars, notes, xa2 = _round_timing(rounds, cur)
        tmax = max(1e-3, max(r.draft_ms + r.target_ms for r in rounds))
        time_title = t("kv.time_rounds")
    else:  # timing, on axes x2 / y2: per step
        bars, notes, outline = _step_timing(steps, cur)
        xa2, tmax, time_title = xa, max(1e-3, max(s.ms for s in steps)), t("kv.time_steps")
        shapes.append(outline)
    ymax = max(1, max(max(s.kv_cache_bytes, s.kv_cache_bytes_formula) for s in steps))
    layout = base_layout(
        t("kv.title"), height=400, margin=dict(l=70, r=20, t=80, b=80), bargap=BARGAP, barmode="stack",
        legend=dict(orientation="h", x=0, y=-0.22), annotations=_annotations(time_title, notes), shapes=shapes,
        xaxis=dict(xa, domain=[0.0, 0.44], anchor="y"), xaxis2=dict(xa2, domain=[0.56, 1.0], anchor="y2"),
        yaxis=dict(range=[0, ymax * 1.08], autorange=False, tickformat="~s", title=dict(text=t("kv.bytes")), anchor="x"),
        yaxis2=dict(range=[0, tmax * _headroom(notes)], autorange=False, title=dict(text=t("kv.milliseconds")), anchor="x2"),
    )
    return {"data": _cache_traces(steps, model, rounds) + bars, "layout": layout}


def _number(x: float) -> str:
    """A whole number as one ('4'), another to 2 decimals ('2.50'), the language's way."""
    return thousands(x) if float(x).is_integer() else decimal(x, 2)


def kv_summary_html(*, steps: Sequence[StepRecord], step: int, model: ModelInfo) -> str:
    """The step's cache in words: positions, bytes, and the formula with the model's numbers."""
    s = steps[step]
    P = s.position + 1
    bpv = bytes_per_value(s, model)
    L, G, D = model.n_layers, model.n_kv_heads, model.head_dim
    per_token = 2 * L * G * D * bpv
    total = f"<b>{t_html('kv.n_bytes', n=thousands(s.kv_cache_bytes_formula))}</b>"
    dtype = html.escape(model.dtype)
    lines = [
        t_html("kv.summary_holds", step=s.index, positions=f"<b>{html.escape(count(P, 'position'))}</b>", last=thousands(P - 1)),
        t_html("kv.summary_measured", bytes=f"<b>{html.escape(human_bytes(s.kv_cache_bytes))}</b>", n=thousands(s.kv_cache_bytes),
               per_layer=html.escape(human_bytes(s.kv_cache_bytes / L))),
        t_html("kv.summary_formula", layers=L, heads=G, dim=D, positions=thousands(P), bpv=_number(bpv), dtype=dtype, total=total,
               per_token=thousands(per_token)),
    ]
    held = kv_positions(model, P)
    if any(h < P for h in held):
        lines[-1] = t_html("kv.summary_window", heads=G, dim=D, bpv=_number(bpv), dtype=dtype, n_win=sum(1 for h in held if h < P),
                           layers=L, window=thousands(min(h for h in held)), positions=thousands(P), total=total)
    if G != model.n_heads and G:
        lines.append(t_html("kv.summary_gqa", query=model.n_heads, kv=G, ratio=_number(model.n_heads / G)))
    return "<div class='kv-summary' style='font-size:14px;line-height:1.5'>" + "".join(f"<p style='margin:2px 0'>{x}</p>" for x in lines) + "</div>"
