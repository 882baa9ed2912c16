"""Attention: the causal query x key matrices of one layer, and a per-layer/per-head overview.

Weights come straight from the records: the prefill step's full T0 x T0 matrix (when stored)
and each decode step's single query row.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from pipeline.trace.records import StepRecord
from pipeline.sampling.stages import LOG2E

from viz.style import NEW_COLOR, WEIGHT_SCALE, base_layout, plot_piece
from viz.text import decimal, t, thousands

MAX_TOKENS = 128  # a heatmap shows at most the last this many queries / keys
MAX_GRID_HEADS = 16  # the all-heads grid shows at most this many heads
GRID_CELLS = 160_000  # total heatmap cells in the grid; the window shrinks for many heads
TAG = "\u200b"  # a zero-width space: tags one tile's axis labels apart from another's


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
            n = s.attention_matrix.shape[-1]
            m[:, :, :n, :n] = s.attention_matrix[sel]
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


def window_size(n_heads_shown: int, *, grid: bool, max_tokens: int | None = None) -> int:
    """The last positions a heatmap shows (at most max_tokens, default MAX_TOKENS): fewer per head when
    many heads share the grid."""
    max_tokens = MAX_TOKENS if max_tokens is None else max_tokens
    return max_tokens if not grid else min(max_tokens, int(math.sqrt(GRID_CELLS / n_heads_shown)))


def grid_tiles(n_heads: int) -> tuple[int, int]:
    """(columns, rows) of the all-heads grid."""
    cols = min(n_heads, 3 if n_heads <= 9 else 4)
    return cols, math.ceil(n_heads / cols)


def tile_gap(size: int) -> int:
    """Blank cells between two heads' tiles of `size` cells: room for a head's title at any size."""
    return max(1, math.ceil(size / 12))


def tiled(z: np.ndarray, cols: int, gap: int, fill=np.nan) -> np.ndarray:
    """(k, n, n) matrices -> one matrix: the i-th at tile row i // cols, column i % cols, `fill` between."""
    k, n, _ = z.shape
    rows, step = math.ceil(k / cols), n + gap
    out = np.full((rows * step - gap, min(k, cols) * step - gap), fill, dtype=z.dtype)
    for i in range(k):
        r, c = divmod(i, cols)
        out[r * step:r * step + n, c * step:c * step + n] = z[i]
    return out


def tile_labels(labels: Sequence[str], count: int, gap: int) -> list[str]:
    """Category names along `count` tiles: tile t's labels end in t zero-width spaces (they read the
    same and stay apart: a category axis names each cell once); the gap cells before tile t are
    'gap t.i', never shown (no ticks in the grid, no hover on blank cells)."""
    out: list[str] = []
    for k in range(count):
        out += [f"gap {k}.{i}" for i in range(gap if k else 0)]
        out += [lab + TAG * k for lab in labels]
    return out


def attention_figure(*, steps: Sequence[StepRecord], step: int, layer: int, head: int | None, n_kv_heads: int,
                     pieces: Sequence[str], max_tokens: int | None = None, frame: int | None = None) -> go.Figure:
    """Query x key heatmaps of one layer: all heads tiled in a grid (head=None) or one head larger.

    Upper triangle blank (a token never sees later ones); colour 0..1 fixed; the query row of
    steps[step] (row = its position) outlined; at most the last `max_tokens` (MAX_TOKENS) positions. `frame`:
    positions the axes hold (default: the window's), later rows blank, so that every step of a
    run can share one frame."""
    return go.Figure(attention_figure_dict(steps=steps, step=step, layer=layer, head=head, n_kv_heads=n_kv_heads,
                                           pieces=pieces, max_tokens=max_tokens, frame=frame))


def attention_figure_dict(*, steps: Sequence[StepRecord], step: int, layer: int, head: int | None, n_kv_heads: int,
                          pieces: Sequence[str], max_tokens: int | None = None, frame: int | None = None,
                          matrix: np.ndarray | None = None) -> dict:
    """attention_figure as plain data ({"data", "layout"}, numpy z), not yet checked by Plotly: the
    step viewer builds one per step and checks only the one it ships whole. `matrix`: the layer's
    attention_matrix up to `step` (H, T, T), when the caller has it."""
    st = steps[step]
    H = int(np.asarray(st.attention).shape[1])
    heads = list(range(min(H, MAX_GRID_HEADS))) if head is None else [int(head)]
    T, grid = st.position + 1, head is None
    lo = max(0, T - window_size(len(heads), grid=grid, max_tokens=max_tokens))
    n = T - lo
    size = max(n, int(frame or 0))
    m = attention_matrix(steps, upto=step, layers=[layer])[0] if matrix is None else matrix  # (H, T, T)
    z = np.full((len(heads), size, size), np.nan, dtype=np.float32)
    z[:, :n, :n] = m[heads, lo:, lo:]
    z[:, np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] = np.nan  # causal mask: blank
    labels = position_labels(pieces[:T], lo, lo + size)  # positions not yet written at this step: "k ?" (their tokens are to come)
    row = st.position - lo  # the current query, as a row index within the window
    if grid:
        fig = _grid(z, labels, heads, row=row, n=n, position=st.position, n_kv=(H, n_kv_heads))
        height, margin = 300 * grid_tiles(len(heads))[1] + 80, dict(l=40, r=20, b=30)
    else:
        fig = _single(z[0], labels, heads[0], row=row, n=n, position=st.position)
        height, margin = 600, dict(l=110, r=20, b=110)
    what = t("attention.heads_all", n=H) if grid and len(heads) == H else (
        t("attention.heads_some", last=len(heads) - 1, n=H) if grid else _head_kv(int(head), kv_group(int(head), H, n_kv_heads)))
    title = t("attention.title", block=layer, heads=what, step=step, row=st.position)
    notes = [t("attention.last_n", n=thousands(n), total=thousands(T))] if lo > 0 else []
    if np.isnan(z[:, np.tril_indices(n)[0], np.tril_indices(n)[1]]).any():
        notes.append(t("attention.blank_rows"))
    if notes:
        title += "<br><sup>" + " · ".join(notes) + "</sup>"
    layout = fig["layout"]
    layout.update(base_layout(title, height=height, margin=dict(margin, t=90 if notes else 70)))
    layout["coloraxis"] = dict(colorscale=WEIGHT_SCALE, cmin=0.0, cmax=1.0, colorbar=dict(title=dict(text=t("attention.weight")), thickness=12, len=0.6))
    return fig


def _head_kv(head: int, kv: int) -> str:
    """'head 3 (kv 1)': a query head and the KV head it reads."""
    return t("attention.head_kv", head=head, kv=kv)


def _tile_title(head: int, kv: int) -> str:
    """A tile's title in two lines, the head over its KV head ("head 3<br>(kv 1)"): on one line, neighbouring tiles'
    titles ran into each other on a phone and at 200% zoom."""
    text = _head_kv(head, kv)
    i = max(text.rfind(" ("), text.rfind("（"))
    return f"{text[:i].rstrip()}<br>{text[i:].strip()}" if i > 0 else text


def _hover(head: str) -> str:
    """A cell's hover: its query, its key, its weight, and (aside) the head."""
    return "<br>".join((t("attention.hover_query", query="%{y}"), t("attention.hover_key", key="%{x}"),
                        t("attention.hover_weight", weight="%{z:.3f}"))) + "<extra>" + t("viewer.one_head", head=head) + "</extra>"


def _outline(x0: float, x1: float, y: float, position: int) -> dict:
    return dict(type="rect", xref="x", yref="y", x0=x0, x1=x1, y0=y - 0.5, y1=y + 0.5,
                line=dict(color=NEW_COLOR, width=2), fillcolor="rgba(0,0,0,0)", name=f"query row {position}")


def _axes(nx: int, ny: int, **kw) -> dict:
    """Category axes holding nx x ny cells, fixed (the y axis reads downwards)."""
    axis = dict(type="category", showgrid=False, zeroline=False, autorange=False, **kw)
    return {"xaxis": dict(axis, range=[-0.5, nx - 0.5]), "yaxis": dict(axis, range=[ny - 0.5, -0.5])}


def _single(z: np.ndarray, labels: list[str], head: int, *, row: int, n: int, position: int) -> dict:
    """One head's heatmap with its labels on the axes."""
    trace = dict(type="heatmap", z=z, x=labels, y=labels, coloraxis="coloraxis", hoverongaps=False, name=t("viewer.one_head", head=head),
                 hovertemplate=_hover(str(head)))
    layout = _axes(len(labels), len(labels), showticklabels=True, tickfont=dict(size=10))
    layout["xaxis"].update(tickangle=-60, title=dict(text=t("attention.axis_key")))
    layout["yaxis"]["title"] = dict(text=t("attention.axis_query"))
    layout["shapes"] = [_outline(-0.5, n - 0.5, row, position)]
    return {"data": [trace], "layout": layout}


def _grid(z: np.ndarray, labels: list[str], heads: list[int], *, row: int, n: int, position: int, n_kv: tuple[int, int]) -> dict:
    """Every head's matrix as a tile of one heatmap (one subplot redraws several times faster than a
    subplot per head), blank cells between tiles, each tile titled, its query row outlined. The hover
    names the head from `customdata` (each cell's head; -1 between tiles)."""
    size = z.shape[-1]
    cols, rows = grid_tiles(len(heads))
    gap = tile_gap(size)
    step = size + gap
    who = tiled(np.broadcast_to(np.asarray(heads, np.int8)[:, None, None], z.shape), cols, gap, fill=-1)
    xl, yl = tile_labels(labels, cols, gap), tile_labels(labels, rows, gap)
    trace = dict(type="heatmap", z=tiled(z, cols, gap), x=xl, y=yl, customdata=who, coloraxis="coloraxis", hoverongaps=False,
                 name=t("attention.heads"), hovertemplate=_hover("%{customdata}"))
    shapes, titles = [], []
    for k, h in enumerate(heads):
        r, c = divmod(k, cols)
        shapes.append(_outline(c * step - 0.5, c * step + n - 0.5, r * step + row, position))
        titles.append(dict(text=_tile_title(h, kv_group(h, *n_kv)), xref="x", yref="y", x=c * step + (size - 1) / 2, y=r * step - 0.5,
                           xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=12)))
    layout = _axes(len(xl), len(yl), showticklabels=False)
    layout.update(shapes=shapes, annotations=titles)
    return {"data": [trace], "layout": layout}


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


# each metric's (title, explanation, hover line holding {value}), in the language spoken (called when drawn)
_METRIC_TEXT = {
    "entropy": lambda: (t("attention.entropy_title"), t("attention.entropy_explain"), t("attention.entropy_hover", value="%{z:.2f}")),
    "newest": lambda: (t("attention.newest_title"), t("attention.newest_explain"), t("attention.newest_hover", value="%{z:.3f}")),
    "first": lambda: (t("attention.first_title"), t("attention.first_explain"), t("attention.first_hover", value="%{z:.3f}")),
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
    name, explain, value = _METRIC_TEXT[key]()
    xl = [f"h{h}·kv{kv_group(h, H, n_kv_heads)}" for h in range(H)]
    hover = (t("attention.overview_cell", block="%{y}", head="%{x}") + "<br>" + value
             + ("<br>" + t("attention.uniform", n=thousands(K), bits=decimal(math.log2(K), 2)) if unit == "bits" else "") + "<extra></extra>")
    heat = dict(
        type="heatmap", z=vals.astype(np.float32), x=xl, y=list(range(L)), zmin=0.0, zmax=vmax,
        colorscale="Viridis" if unit == "bits" else WEIGHT_SCALE, hovertemplate=hover,
        colorbar=dict(title=dict(text=t("attention.bits") if unit == "bits" else t("attention.weight")), thickness=12),
    )
    per = max(H // max(n_kv_heads, 1), 1)
    # white separators between the groups of query heads sharing one KV head
    seps = [dict(type="line", xref="x", yref="paper", x0=g * per - 0.5, x1=g * per - 0.5, y0=0, y1=1, line=dict(color="white", width=3))
            for g in range(1, math.ceil(H / per))] if 1 < per < H else []
    layout = base_layout(t("attention.overview_title", name=name, step=step.index, position=step.position) + f"<br><sup>{explain}</sup>",
                         height=max(360, 16 * L + 140), margin=dict(l=60, r=20, t=80, b=70), shapes=seps,
                         xaxis=dict(type="category", title=dict(text=t("attention.axis_head")), tickangle=-45, tickfont=dict(size=11)),
                         yaxis=dict(title=dict(text=t("ablate.map_y")), dtick=max(1, L // 10)))
    return {"data": [heat], "layout": layout}
