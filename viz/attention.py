"""Attention: the causal query x key matrices of one layer, and a per-layer/per-head overview.

Weights come straight from the records: the prefill step's full T0 x T0 matrix (when stored)
and each decode step's single query row.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from pipeline.records import StepRecord
from pipeline.sampling import LOG2E

from .style import NEW_COLOR, WEIGHT_SCALE, base_layout, block_label, plot_piece

MAX_TOKENS = 128  # a heatmap shows at most the last this many queries / keys
MAX_GRID_HEADS = 16  # the all-heads grid shows at most this many heads
GRID_CELLS = 160_000  # total heatmap cells in the grid; the window shrinks for many heads


def attention_matrix(steps: Sequence[StepRecord], *, upto: int, layers: Sequence[int] | None = None) -> np.ndarray:
    """The causal attention of steps[0..upto]: (layers, heads, T, T), T = steps[upto].position + 1.

    A step with a stored matrix (a prefill) fills its whole block; every step fills its own query
    row. Rows no record holds (a long prompt's prefill stores only its last row) stay NaN;
    above the diagonal is 0. `layers` picks layers (default: all)."""
    upto = int(upto)
    T = steps[upto].position + 1
    sel = slice(None) if layers is None else list(layers)
    L, H = np.asarray(steps[0].attention)[sel].shape[:2]
    m = np.full((L, H, T, T), np.nan, dtype=np.float32)  # (L, H, T, T)
    for s in steps[: upto + 1]:
        if s.attention_matrix is not None:
            t = s.attention_matrix.shape[-1]
            m[:, :, :t, :t] = s.attention_matrix[sel]
        m[:, :, s.position, : s.position + 1] = s.attention[sel]  # (L, H, position+1)
    m[:, :, np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]] = 0.0
    return m


def kv_group(head: int, n_heads: int, n_kv_heads: int) -> int:
    """The KV head a query head reads under grouped-query attention."""
    per = max(n_heads // max(n_kv_heads, 1), 1)
    return head // per


def position_labels(pieces: Sequence[str], lo: int, hi: int) -> list[str]:
    # unique category labels: the position keeps repeated pieces apart
    return [f"{k} {plot_piece(pieces[k], 10) if k < len(pieces) else '?'}" for k in range(lo, hi)]


def attention_figure(*, steps: Sequence[StepRecord], step: int, layer: int, head: int | None, n_kv_heads: int,
                     pieces: Sequence[str], max_tokens: int = MAX_TOKENS) -> go.Figure:
    """Query x key heatmaps of one layer: all heads in a grid (head=None) or one head larger.

    Upper triangle blank (a token never sees later ones); colour 0..1 fixed; the query row of
    steps[step] (row = its position) outlined; at most the last `max_tokens` positions."""
    return go.Figure(attention_figure_dict(steps=steps, step=step, layer=layer, head=head, n_kv_heads=n_kv_heads,
                                           pieces=pieces, max_tokens=max_tokens))


def attention_figure_dict(*, steps: Sequence[StepRecord], step: int, layer: int, head: int | None, n_kv_heads: int,
                          pieces: Sequence[str], max_tokens: int = MAX_TOKENS, matrix: np.ndarray | None = None) -> dict:
    """attention_figure as plain data ({"data", "layout"}, numpy z), not yet checked by Plotly: the
    step viewer builds one per step and checks only the one it ships whole. `matrix`: the layer's
    attention_matrix up to `step` (H, T, T), when the caller has it."""
    st = steps[step]
    H = int(np.asarray(st.attention).shape[1])
    heads = list(range(min(H, MAX_GRID_HEADS))) if head is None else [int(head)]
    T = st.position + 1
    window = max_tokens if head is not None else min(max_tokens, int(math.sqrt(GRID_CELLS / len(heads))))
    lo = max(0, T - window)
    m = attention_matrix(steps, upto=step, layers=[layer])[0] if matrix is None else matrix  # (H, T, T)
    z = m[:, lo:, lo:].copy()  # (H, T-lo, T-lo)
    n = T - lo
    z[:, np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] = np.nan  # causal mask: blank
    labels = position_labels(pieces, lo, T)
    row = st.position - lo  # the current query, as a row index within the window

    grid = head is None
    cols = (3 if len(heads) <= 9 else 4) if grid else 1
    rows = math.ceil(len(heads) / cols)
    gap_x, gap_y = 0.03, (0.08 if rows < 4 else 0.05) if grid else 0.0
    w, h_ = (1 - gap_x * (cols - 1)) / cols, (1 - gap_y * (rows - 1)) / rows
    axis = dict(type="category", showticklabels=not grid, tickfont=dict(size=10), showgrid=False)
    traces, shapes, titles, layout = [], [], [], {}
    for k, h in enumerate(heads):
        r, c = divmod(k, cols)
        sx = "" if k == 0 else str(k + 1)  # plotly axis suffix: x, x2, x3 ...
        x0, y1 = c * (w + gap_x), 1 - r * (h_ + gap_y)
        layout[f"xaxis{sx}"] = dict(axis, domain=[max(x0, 0.0), min(x0 + w, 1.0)], anchor=f"y{sx}", tickangle=-60)
        layout[f"yaxis{sx}"] = dict(axis, domain=[max(y1 - h_, 0.0), min(y1, 1.0)], anchor=f"x{sx}", autorange="reversed")
        traces.append(dict(
            type="heatmap", z=z[h], x=labels, y=labels, coloraxis="coloraxis", hoverongaps=False, name=f"head {h}",
            xaxis=f"x{sx}", yaxis=f"y{sx}", hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.3f}<extra>head " + str(h) + "</extra>",
        ))
        shapes.append(dict(type="rect", xref=f"x{sx}", yref=f"y{sx}", x0=-0.5, x1=n - 0.5, y0=row - 0.5, y1=row + 0.5,
                           line=dict(color=NEW_COLOR, width=2), fillcolor="rgba(0,0,0,0)", name=f"query row {st.position}"))
        if grid:
            titles.append(dict(text=f"head {h} (kv {kv_group(h, H, n_kv_heads)})", xref="paper", yref="paper", x=x0 + w / 2, y=y1,
                               xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=12)))
    if not grid:
        layout["xaxis"]["title"] = dict(text="key (attended to)")
        layout["yaxis"]["title"] = dict(text="query (attending)")
    what = f"all {H} heads" if grid and len(heads) == H else (f"heads 0–{len(heads) - 1} of {H}" if grid else
                                                               f"head {head} (kv {kv_group(int(head), H, n_kv_heads)})")
    title = f"{block_label(layer).capitalize()} · {what} · step {step}: query row {st.position} outlined"
    notes = [f"showing the last {n} of {T} positions"] if lo > 0 else []
    if np.isnan(z[:, np.tril_indices(n)[0], np.tril_indices(n)[1]]).any():
        notes.append("blank rows: the trace does not hold the prompt's full attention matrix (long prompt)")
    if notes:
        title += "<br><sup>" + " · ".join(notes) + "</sup>"
    height = 300 * rows + 80 if grid else 600
    layout.update(base_layout(title, height=height, margin=dict(l=40 if grid else 110, r=20, t=90 if notes else 70, b=30 if grid else 110)))
    layout.update(shapes=shapes, annotations=titles, coloraxis=dict(
        colorscale=WEIGHT_SCALE, cmin=0.0, cmax=1.0, colorbar=dict(title=dict(text="weight"), thickness=12, len=0.6)))
    return {"data": traces, "layout": layout}


def overview_values(attention: np.ndarray, metric: str) -> tuple[np.ndarray, float, str]:
    """(values (L, H), colour max, unit) of one query row per layer and head.

    attention: (L, H, K). entropy: bits of each head's row; newest: weight on the token itself
    (the last key); first / bos: weight on the first token."""
    a = np.asarray(attention, np.float64)  # (L, H, K)
    K = a.shape[-1]
    if metric == "entropy":
        with np.errstate(divide="ignore", invalid="ignore"):
            ent = -np.where(a > 0, a * np.log(a), 0.0).sum(-1) * LOG2E
        return ent, max(math.log2(K), 1e-9), "bits"
    if metric == "newest":
        return a[..., -1], 1.0, "weight"
    if metric in ("first", "bos"):
        return a[..., 0], 1.0, "weight"
    raise ValueError(f"unknown attention overview metric {metric!r}: use 'entropy', 'newest' or 'first'")


_METRIC_TEXT = {
    "entropy": ("Entropy of each head's attention", "how spread out the head's attention is: 0 bits = all on one token"),
    "newest": ("Weight on the newest token (itself)", "how much the head attends to the token at its own position"),
    "first": ("Weight on the first token", "the first token often acts as an 'attention sink' where heads park weight"),
}


def attention_overview_figure(*, step: StepRecord, n_kv_heads: int, metric: str = "entropy", zmax: float | None = None) -> go.Figure:
    """attention_overview_figure_dict's figure, checked by Plotly."""
    return go.Figure(attention_overview_figure_dict(step=step, n_kv_heads=n_kv_heads, metric=metric, zmax=zmax))


def attention_overview_figure_dict(*, step: StepRecord, n_kv_heads: int, metric: str = "entropy", zmax: float | None = None) -> dict:
    """Layer x head heatmap of one number per head for the query of `step` (see overview_values).

    zmax: the top of the colour scale (default: the metric's own maximum at this step); one value
    for every step keeps colours comparable while the step changes."""
    vals, vmax, unit = overview_values(step.attention, metric)  # (L, H)
    vmax = vmax if zmax is None else float(zmax)
    L, H = vals.shape
    K = int(np.asarray(step.attention).shape[-1])
    key = "first" if metric == "bos" else metric
    name, explain = _METRIC_TEXT[key]
    xl = [f"h{h}·kv{kv_group(h, H, n_kv_heads)}" for h in range(H)]
    fmt = ".2f" if unit == "bits" else ".3f"
    hover = (f"block %{{y}}, head %{{x}}<br>{name.lower()}: %{{z:{fmt}}} {unit}"
             + (f"<br>(uniform over all {K} keys: {math.log2(K):.2f} bits)" if unit == "bits" else "") + "<extra></extra>")
    heat = dict(
        type="heatmap", z=vals.astype(np.float32), x=xl, y=list(range(L)), zmin=0.0, zmax=vmax,
        colorscale="Viridis" if unit == "bits" else WEIGHT_SCALE, hovertemplate=hover,
        colorbar=dict(title=dict(text=unit), thickness=12),
    )
    per = max(H // max(n_kv_heads, 1), 1)
    # white separators between the groups of query heads sharing one KV head
    seps = [dict(type="line", xref="x", yref="paper", x0=g * per - 0.5, x1=g * per - 0.5, y0=0, y1=1, line=dict(color="white", width=3))
            for g in range(1, math.ceil(H / per))] if 1 < per < H else []
    layout = base_layout(f"{name} · step {step.index} (position {step.position})<br><sup>{explain}</sup>",
                         height=max(360, 16 * L + 140), margin=dict(l=60, r=20, t=80, b=70), shapes=seps,
                         xaxis=dict(type="category", title=dict(text="head · its KV head"), tickangle=-45, tickfont=dict(size=11)),
                         yaxis=dict(title=dict(text="block"), dtick=max(1, L // 10)))
    return {"data": [heat], "layout": layout}
