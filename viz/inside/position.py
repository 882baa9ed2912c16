"""How the model knows word order (pipeline.inside.PositionRecord), and what swapping two tokens
does to attention (pipeline.inside.SwapRecord).

RoPE rotates each pair of a query's and key's dimensions by position x frequency; learned
positions add a trained vector per position; some models have neither.
"""
from __future__ import annotations

import html
import math
from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from pipeline.trace.records import PositionRecord, SwapRecord

from viz.style import GEN_COLOR, MUTED, NEW_COLOR, PROMPT_COLOR, base_layout, plot_lines, plot_piece, truncate, visible
from viz.text import count, decimal, t, t_html, thousands

TWO_PI = 2.0 * math.pi
MAX_POSITIONS = 96  # the RoPE heatmap shows at most the last this many positions
ANGLE_TICKS = ([0, math.pi / 2, math.pi, 3 * math.pi / 2, TWO_PI], ["0", "π/2", "π", "3π/2", "2π"])


def rope_angles(inv_freq, positions) -> np.ndarray:
    """(len(positions), n_pairs) rotation angle of each frequency pair at each position, mod 2π."""
    p = np.asarray(positions, np.float64)[:, None]
    f = np.asarray(inv_freq, np.float64)[None, :]
    return np.mod(p * f, TWO_PI)


def wavelength(inv_freq) -> np.ndarray:
    """Tokens per full turn of each pair: 2π / inv_freq."""
    f = np.asarray(inv_freq, np.float64)
    with np.errstate(divide="ignore"):
        return np.where(f > 0, TWO_PI / f, np.inf)


def _tokens(x: float) -> str:
    return thousands(x) if x >= 100 else decimal(x, 1)


def _turn(x: float) -> str:
    """'one turn every 6.3 tokens' (a pair's wavelength, `x` tokens; never for a pair that does not turn)."""
    return t("position.turn_never") if not np.isfinite(x) else t("position.turn_every", n=_tokens(x))


def turn_words(degrees: float) -> str:
    """'only 12.5°' below one turn; '2 turns and 40°' from one turn on (angles wrap at 360°)."""
    if degrees < 360:
        return t("position.only", degrees=decimal(degrees, 1))
    turns, rest = divmod(degrees, 360.0)
    return t("position.turns", turns=count(int(turns), "turn"), degrees=thousands(rest))


def _pos_labels(pieces: Sequence[str], lo: int, hi: int) -> list[str]:
    return [f"{k} {plot_piece(pieces[k], 10) if k < len(pieces) else ''}".rstrip() for k in range(lo, hi)]


def rope_angles_figure(position: PositionRecord, pieces: Sequence[str], *, max_positions: int = MAX_POSITIONS) -> go.Figure:
    """Heatmap of RoPE's rotation angle (mod 2π, cyclic colours) for every position of the context
    (rows, labelled with its pieces) and every frequency pair (columns, fastest first)."""
    f = np.asarray(position.inv_freq, np.float64)  # (P,)
    T = max(len(pieces), 1)
    lo = max(0, T - max_positions)
    ang = rope_angles(f, np.arange(lo, T))  # (T-lo, P)
    wl = wavelength(f)
    P = f.size
    labels = _pos_labels(pieces, lo, T)
    rows = [t_html("position.at", position=lo + r, piece=plot_piece(pieces[lo + r], 20) if lo + r < len(pieces) else "")
            for r in range(T - lo)]
    turns = [html.escape(_turn(wl[c])) for c in range(P)]
    hover = [[f"{rows[r]}<br>{t_html('position.pair', pair=c, degrees=thousands(math.degrees(ang[r, c])), radians=decimal(ang[r, c], 2))}"
              f"<br>{turns[c]}" for c in range(P)] for r in range(T - lo)]
    heat = go.Heatmap(
        z=ang.astype(np.float32), x=list(range(P)), y=labels, zmin=0.0, zmax=TWO_PI, colorscale="Twilight",
        customdata=hover, hovertemplate="%{customdata}<extra></extra>", name=t("position.rotation"),
        colorbar=dict(title=dict(text=t_html("position.angle")), tickvals=ANGLE_TICKS[0], ticktext=ANGLE_TICKS[1], thickness=12, len=0.7),
    )
    fast, slow = int(np.argmax(f)), int(np.argmin(f))
    turned = math.degrees(float(f[slow]) * (T - 1))
    note = (t_html("position.fastest", pair=fast, turn=html.escape(_turn(wl[fast]))) + "<br>"
            + t_html("position.slowest", pair=slow, turn=html.escape(_turn(wl[slow])), turned=html.escape(turn_words(turned)), n=thousands(T)))
    sub = t_html("position.dims", dims=thousands(position.rotary_dim), pairs=thousands(P)) if position.rotary_dim else t_html("position.pairs", pairs=thousands(P))
    if position.rope_theta:
        sub = f"θ = {thousands(position.rope_theta)}, {sub}"
    if lo:
        sub += " · " + t_html("position.last", shown=thousands(T - lo), n=thousands(T))
    title = f"{t_html('position.rope_title')}<br><sup>{sub}</sup>"
    layout = base_layout(
        title, height=int(min(900, max(380, 16 * (T - lo) + 190))), margin=dict(l=110, r=20, t=70, b=115),
        annotations=[dict(xref="paper", yref="paper", x=0, y=0, yshift=-62, xanchor="left", yanchor="top", showarrow=False,
                          align="left", text=note, font=dict(size=12, color="#4a5568"), name="wavelengths")],
        xaxis=dict(title=dict(text=t_html("position.pair_axis")), dtick=max(1, P // 8)),
        yaxis=dict(type="category", autorange="reversed", title=dict(text=t_html("position.axis")), tickfont=dict(size=11)),
    )
    return go.Figure(data=[heat], layout=layout)


def learned_positions_figure(position: PositionRecord, pieces: Sequence[str] | None = None) -> go.Figure:
    """The learned position vectors 0..n-1 in the model's fixed 2D projection, as a path coloured
    by position; the positions the context uses (len(pieces)) outlined in red."""
    xy = np.asarray(position.learned_2d, np.float64).reshape(-1, 2)  # (n, 2)
    n = xy.shape[0]
    traces = [go.Scatter(
        x=xy[:, 0], y=xy[:, 1], mode="lines+markers", name=t("position.vectors", last=n - 1),
        line=dict(color=MUTED, width=1), marker=dict(size=6, color=np.arange(n), colorscale="Viridis", cmin=0, cmax=max(n - 1, 1),
                                                     colorbar=dict(title=dict(text=t_html("position.axis")), thickness=12, len=0.7)),
        customdata=np.arange(n), hovertemplate=t_html("position.one", position="%{customdata}") + "<br>(%{x:.2f}, %{y:.2f})<extra></extra>",
    )]
    if pieces:
        k = min(len(pieces), n)
        traces.append(go.Scatter(
            x=xy[:k, 0], y=xy[:k, 1], mode="markers", name=t("position.used", last=k - 1),
            marker=dict(size=11, color="rgba(0,0,0,0)", line=dict(color=NEW_COLOR, width=2)),
            hovertext=[t_html("position.at", position=i, piece=plot_piece(pieces[i], 20)) for i in range(k)], hovertemplate="%{hovertext}<extra></extra>",
        ))
    ticks = sorted({0, n - 1, *range(0, n, max(1, n // 8))})
    anns = [dict(x=xy[i, 0], y=xy[i, 1], xref="x", yref="y", text=str(i), showarrow=False, yshift=10, font=dict(size=11),
                 name=f"position {i}") for i in ticks]
    title = f"{t_html('position.learned_title', n=thousands(n))}<br><sup>{t_html('position.learned_note')}</sup>"
    layout = base_layout(title, height=500, margin=dict(l=60, r=20, t=100, b=50), annotations=anns,
                         legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom"),
                         xaxis=dict(title=dict(text=t_html("residual.direction_1")), zeroline=False),
                         yaxis=dict(title=dict(text=t_html("residual.direction_2")), zeroline=False))
    return go.Figure(data=traces, layout=layout)


def _message_figure(title: str, text: str) -> go.Figure:
    layout = base_layout(title, height=260, xaxis=dict(visible=False), yaxis=dict(visible=False),
                         annotations=[dict(xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False, text=text, align="center",
                                           font=dict(size=14), name="message")])
    return go.Figure(layout=layout)


def position_figure(position: PositionRecord, pieces: Sequence[str]) -> go.Figure:
    """The figure for the model's kind of position information."""
    if position.kind == "rope" and position.inv_freq is not None and np.asarray(position.inv_freq).size:
        return rope_angles_figure(position, pieces)
    if position.kind == "learned" and position.learned_2d is not None and np.asarray(position.learned_2d).size:
        return learned_positions_figure(position, pieces)
    if position.kind == "none":
        return _message_figure(t_html("position.none_title"), plot_lines(t("position.none_adds")) + "<br>" + plot_lines(t("position.none_order")))
    return _message_figure(t_html("position.unknown_title"), plot_lines(t("position.unknown", kind=truncate(visible(str(position.kind)), 20))))


def swap_figure(swap: SwapRecord, layer: int | None = None) -> go.Figure:
    """Top: attention of the last query over the keys (original order), original vs swapped run, at
    one layer (default: the last; 0-based like the attention panel). Bottom: per layer, the largest
    change of any key's weight. The swapped tokens are marked."""
    a = np.asarray(swap.attention, np.float64)  # (L, T)
    b = np.asarray(swap.attention_swapped, np.float64)  # (L, T)
    L, T = a.shape
    layer = L - 1 if layer is None else int(layer)
    if not 0 <= layer < L:
        raise ValueError(f"layer {layer} out of range 0..{L - 1}")
    diff = np.abs(a - b)  # (L, T)
    per_layer = diff.max(axis=1)  # (L,)
    keys = [("⇄ " if k in (swap.i, swap.j) else "") + f"{k} {plot_piece(swap.pieces[k], 10)}" for k in range(T)]
    hover = [t_html("position.key_swapped" if k in (swap.i, swap.j) else "position.key", key=k, piece=plot_piece(swap.pieces[k], 24))
             for k in range(T)]
    traces = [
        go.Bar(x=keys, y=a[layer], name=t("position.original"), marker=dict(color=PROMPT_COLOR), customdata=hover,
               hovertemplate="%{customdata}<br>" + t_html("position.original_weight", weight="%{y:.3f}") + "<extra></extra>"),
        go.Bar(x=keys, y=b[layer], name=t("position.swapped", i=swap.i, j=swap.j), marker=dict(color=GEN_COLOR), customdata=hover,
               hovertemplate="%{customdata}<br>" + t_html("position.swapped_weight", weight="%{y:.3f}") + "<extra></extra>"),
        go.Bar(x=list(range(L)), y=per_layer, xaxis="x2", yaxis="y2", name=t("position.max_change_name"), showlegend=False,
               marker=dict(color=[NEW_COLOR if l == layer else MUTED for l in range(L)]),
               hovertemplate=t_html("position.block_change", block="%{x}", change="%{y:.3f}") + "<extra></extra>"),
    ]
    same = swap.top_piece == swap.top_piece_swapped
    title = (t_html("position.swap_title", a=plot_piece(swap.pieces[swap.i], 12), i=swap.i, b=plot_piece(swap.pieces[swap.j], 12), j=swap.j,
                    change=decimal(swap.max_abs_diff, 3))
             + "<br><sup>" + t_html("position.next_same" if same else "position.next_changed", before=plot_piece(swap.top_piece, 16),
                                    after=plot_piece(swap.top_piece_swapped, 16))
             + " · " + t_html("position.swap_where", block=layer) + "</sup>")
    shade = [dict(type="rect", xref="x", yref="y domain", x0=k - 0.5, x1=k + 0.5, y0=0, y1=1, fillcolor="rgba(192,38,45,0.08)",
                  line=dict(width=0), layer="below", name=f"swapped {k}") for k in (swap.i, swap.j) if 0 <= k < T]
    layout = base_layout(
        title, height=560, margin=dict(l=60, r=20, t=100, b=60), barmode="group", bargap=0.2, shapes=shade,
        legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom"),
        xaxis=dict(domain=[0, 1], anchor="y", type="category", tickangle=-50, tickfont=dict(size=11)),
        yaxis=dict(domain=[0.42, 1.0], title=dict(text=t_html("position.weight_axis")), rangemode="tozero"),
        xaxis2=dict(domain=[0, 1], anchor="y2", title=dict(text=t_html("residual.block")), dtick=1 if L <= 16 else 2),
        yaxis2=dict(domain=[0.0, 0.18], title=dict(text=t_html("position.max_change"), font=dict(size=12)), rangemode="tozero"),
    )
    return go.Figure(data=traces, layout=layout)
