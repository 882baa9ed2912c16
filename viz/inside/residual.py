"""The residual stream of one step's query: its path through the layers in 2D, and how much each
block (attention, feed-forward) adds to it.

Blocks are numbered 0..L-1, as in the hook names (viz.style.block_label / depth_label). resid_2d
row 0 is the input embedding and row k + 1 the stream after block k; update_norm[k],
attn_out_norm[k] and mlp_out_norm[k] belong to block k.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from viz.style import GEN_COLOR, MUTED, NEW_COLOR, PROMPT_COLOR, base_layout, block_label, depth_label, plot_piece, plot_text
from viz.text import decimal, pct, t

DEPTH_SCALE = "Viridis"


def _opt(a) -> np.ndarray | None:
    return None if a is None else np.asarray(a, np.float64)


def update_ratio(update_norm, resid_norm) -> np.ndarray:
    """(L,) |what block k added| / |the stream it was added to| (the stream entering block k)."""
    u = np.asarray(update_norm, np.float64)
    r = np.asarray(resid_norm, np.float64)[: u.size]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(r > 0, u / r, np.nan)


def residual_path_figure(resid_2d, resid_norm=None, update_norm=None, *, piece: str = "", layer_labels: Sequence[str] | None = None,
                         step: int | None = None) -> go.Figure:
    """The query's residual stream after every layer, in the model's fixed 2D projection: points
    coloured by depth, joined by arrows from the input embedding (start) to the last layer (end).

    resid_2d: (L+1, 2); resid_norm: (L+1,) norms of the full hidden states; update_norm: (L,)."""
    xy = np.asarray(resid_2d, np.float64).reshape(-1, 2)  # (L+1, 2)
    n = xy.shape[0]
    L = n - 1
    labels = list(layer_labels) if layer_labels is not None else [depth_label(k, n - 1) for k in range(n)]
    if len(labels) != n:
        raise ValueError(f"{len(labels)} layer labels for {n} points")
    rn, un = _opt(resid_norm), _opt(update_norm)
    hover = []
    for k in range(n):
        h = f"<b>{plot_text(labels[k])}</b>"
        if rn is not None:
            h += "<br>" + t("residual.stream_norm", norm=decimal(rn[k], 1))
        if un is not None and k >= 1:
            h += "<br>" + t("residual.added", block=block_label(k - 1), norm=decimal(un[k - 1], 1))
            if rn is not None and rn[k - 1] > 0:
                h += " " + t("residual.added_share", share=pct(un[k - 1] / rn[k - 1], 0))
        hover.append(h)
    path = go.Scatter(
        x=xy[:, 0], y=xy[:, 1], mode="lines+markers", name=t("residual.path"),
        line=dict(color=MUTED, width=1), customdata=hover, hovertemplate="%{customdata}<br>(%{x:.2f}, %{y:.2f})<extra></extra>",
        marker=dict(size=9, color=np.arange(n), colorscale=DEPTH_SCALE, cmin=0, cmax=max(L, 1), line=dict(width=0.5, color="white"),
                    colorbar=dict(title=dict(text=t("residual.depth")), thickness=12, len=0.7)),
    )
    ends = go.Scatter(
        x=[xy[0, 0], xy[-1, 0]], y=[xy[0, 1], xy[-1, 1]], mode="markers+text", name=t("residual.ends"),
        marker=dict(size=15, symbol=["circle-open", "star"], color=[PROMPT_COLOR, NEW_COLOR], line=dict(width=2.5)),
        text=_end_labels(labels, layer_labels is None),
        textposition=[f"bottom {_inward(xy, 0)}", f"top {_inward(xy, -1)}"],
        textfont=dict(size=12, color=[PROMPT_COLOR, NEW_COLOR]), hoverinfo="skip",
    )
    # one arrow per layer: from the stream before it to the stream after it
    arrows = [dict(x=xy[k, 0], y=xy[k, 1], ax=xy[k - 1, 0], ay=xy[k - 1, 1], xref="x", yref="y", axref="x", ayref="y",
                   showarrow=True, arrowhead=2, arrowsize=1, arrowwidth=1.3, arrowcolor="#718096", text="", name=block_label(k - 1))
               for k in range(1, n) if np.all(np.isfinite(xy[k - 1 : k + 1])) and not np.allclose(xy[k], xy[k - 1])]
    title = (t("residual.path_title", of_piece=_of(piece), n=L) + _at(step) + "<br><sup>" + t("residual.path_note") + "</sup>")
    layout = base_layout(title, height=520, margin=dict(l=60, r=20, t=90, b=50), annotations=arrows, showlegend=False,
                         xaxis=dict(title=dict(text=t("residual.direction_1")), zeroline=False),
                         yaxis=dict(title=dict(text=t("residual.direction_2")), zeroline=False))
    return go.Figure(data=[path, ends], layout=layout)


def _end_labels(labels: list, own: bool) -> list[str]:
    """The path's two ends named, each in two short lines ("end:" over "after block 29"): one line centred on its point
    ran past the drawing's edges on a phone, in every language. (The end is the last block: "(the last)" is not said
    twice.)"""
    last = depth_label(len(labels) - 1) if own else labels[-1]
    return [t("residual.start", label="<br>" + plot_text(labels[0])), t("residual.end", label="<br>" + plot_text(last))]


def _inward(xy: np.ndarray, k: int) -> str:
    """Which side of point k its label goes: towards the middle of the drawing (a label centred on a point near an edge
    was cut there, "end: after block 29 (" on a phone)."""
    xs = xy[np.isfinite(xy[:, 0]), 0]
    return "right" if xs.size and np.isfinite(xy[k, 0]) and xy[k, 0] < (xs.min() + xs.max()) / 2 else "left"


def contributions_figure(attn_out_norm, mlp_out_norm, resid_norm=None, update_norm=None, *, piece: str = "",
                         step: int | None = None) -> go.Figure:
    """Per layer: bars of the attention block's and the feed-forward (MLP) block's output norms, the
    residual stream's norm after the layer as a line (right axis), and below, the update's size as a
    share of the stream it is added to (update_norm[k] / resid_norm[k], in %)."""
    a = np.asarray(attn_out_norm, np.float64)  # (L,)
    m = np.asarray(mlp_out_norm, np.float64)  # (L,)
    L = a.size
    rn, un = _opt(resid_norm), _opt(update_norm)
    x = list(range(L))  # block k
    has_ratio = rn is not None and un is not None
    top = [0.34, 1.0] if has_ratio else [0.0, 1.0]
    traces = [
        go.Bar(x=x, y=a, name=t("residual.attention"), marker=dict(color=PROMPT_COLOR),
               hovertemplate=t("residual.attention_hover", block="%{x}", norm="%{y:.2f}") + "<extra></extra>"),
        go.Bar(x=x, y=m, name=t("residual.mlp"), marker=dict(color=GEN_COLOR),
               hovertemplate=t("residual.mlp_hover", block="%{x}", norm="%{y:.2f}") + "<extra></extra>"),
    ]
    if rn is not None:
        # the stream after block k is drawn at x = k; the embedding (before block 0) at x = -1
        traces.append(go.Scatter(x=[-1] + x, y=rn[: L + 1], yaxis="y2", mode="lines+markers", name=t("residual.stream"),
                                 line=dict(color=NEW_COLOR, width=2), marker=dict(size=5),
                                 customdata=[depth_label(r, L) for r in range(L + 1)],
                                 hovertemplate=t("residual.stream_hover", depth="%{customdata}", norm="%{y:.1f}") + "<extra></extra>"))
    layout_extra = {}
    notes = []
    if has_ratio:
        ratio = update_ratio(un, rn)  # (L,)
        traces.append(go.Scatter(x=x, y=ratio, xaxis="x2", yaxis="y3", mode="lines+markers", name=t("residual.ratio"),
                                 line=dict(color="#2f855a", width=2), marker=dict(size=5), showlegend=False,
                                 customdata=[t("residual.ratio_hover", block=block_label(k), update=decimal(un[k], 1), norm=decimal(rn[k], 1)) for k in x],
                                 hovertemplate="%{customdata}: %{y:.0%}<extra></extra>"))
        layout_extra = dict(
            xaxis2=dict(domain=[0, 1], anchor="y3", title=dict(text=t("residual.block")), range=[-1.5, L - 0.5], autorange=False, dtick=_dtick(L)),
            # log: the first block's update can be many times the bare embedding, later ones a few percent
            yaxis3=dict(domain=[0.0, 0.22], anchor="x2", type="log", tickformat=".0%", title=dict(text=t("residual.ratio_axis"), font=dict(size=12))),
        )
        finite = ratio[np.isfinite(ratio)]
        if finite.size:
            notes.append(t("residual.median", share=pct(np.median(finite), 0)))
    more_attn = int(np.sum(a > m))
    notes.append(t("residual.larger", n=more_attn, blocks=L))
    title = t("residual.adds_title", of_piece=_of(piece)) + _at(step) + "<br><sup>" + " · ".join(notes) + "</sup>"
    layout = base_layout(
        title, height=520 if has_ratio else 420, margin=dict(l=60, r=60, t=100, b=50), barmode="group", bargap=0.2,
        legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom", font=dict(size=12)),
        xaxis=dict(domain=[0, 1], anchor="y", range=[-1.5, L - 0.5], autorange=False, dtick=_dtick(L),
                   matches="x2" if has_ratio else None, showticklabels=not has_ratio,
                   title=None if has_ratio else dict(text=t("residual.block"))),
        yaxis=dict(domain=top, title=dict(text=t("residual.output_norm")), rangemode="tozero"),
        yaxis2=dict(domain=top, overlaying="y", side="right", title=dict(text=t("residual.stream_axis"), font=dict(color=NEW_COLOR)),
                    rangemode="tozero", showgrid=False, tickfont=dict(color=NEW_COLOR)),
        **layout_extra,
    )
    return go.Figure(data=traces, layout=layout)


def _of(piece: str) -> str:
    """' of “·the”' after a title's noun, for the token whose stream it is ('' for none)."""
    return " " + t("residual.of_piece", piece=plot_piece(piece, 16)) if piece else ""


def _at(step: int | None) -> str:
    """' · step 3' after a title ('' for none)."""
    return " · " + t("residual.at_step", step=step) if step is not None else ""


def _dtick(L: int) -> int:
    return 1 if L <= 12 else 2 if L <= 24 else 5
