"""How the model knows word order (pipeline.inside.PositionRecord), and what swapping two tokens
does to attention (pipeline.inside.SwapRecord).

RoPE rotates each pair of a query's and key's dimensions by position x frequency; learned
positions add a trained vector per position; some models have neither.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from pipeline.records import PositionRecord, SwapRecord

from .style import GEN_COLOR, MUTED, NEW_COLOR, PROMPT_COLOR, base_layout, plot_piece

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
    return "never" if not np.isfinite(x) else f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def turn_words(degrees: float) -> str:
    """'only 12.5°' below one turn; '2 turns and 40°' from one turn on (angles wrap at 360°)."""
    if degrees < 360:
        return f"only {degrees:.1f}°"
    turns, rest = divmod(degrees, 360.0)
    return f"{int(turns)} turn{'s' if turns >= 2 else ''} and {rest:.0f}°"


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
    hover = [[f"position {lo + r}: {plot_piece(pieces[lo + r], 20) if lo + r < len(pieces) else ''}<br>pair {c}: "
              f"{math.degrees(ang[r, c]):.0f}° ({ang[r, c]:.2f} rad)<br>one turn every {_tokens(wl[c])} tokens"
              for c in range(P)] for r in range(T - lo)]
    heat = go.Heatmap(
        z=ang.astype(np.float32), x=list(range(P)), y=labels, zmin=0.0, zmax=TWO_PI, colorscale="Twilight",
        customdata=hover, hovertemplate="%{customdata}<extra></extra>", name="rotation angle",
        colorbar=dict(title=dict(text="angle"), tickvals=ANGLE_TICKS[0], ticktext=ANGLE_TICKS[1], thickness=12, len=0.7),
    )
    fast, slow = int(np.argmax(f)), int(np.argmin(f))
    turned = math.degrees(float(f[slow]) * (T - 1))
    note = (f"fastest pair ({fast}): one turn every {_tokens(wl[fast])} tokens<br>slowest pair ({slow}): one turn every "
            f"{_tokens(wl[slow])} tokens, {turn_words(turned)} over these {T} positions")
    theta = f"θ = {position.rope_theta:,.0f}, " if position.rope_theta else ""
    rd = f"{position.rotary_dim} rotating dimensions = " if position.rotary_dim else ""
    title = (f"RoPE: how far each pair of dimensions is rotated at each position<br><sup>{theta}{rd}{P} pairs"
             + (f" · last {T - lo} of {T} positions" if lo else "") + "</sup>")
    layout = base_layout(
        title, height=int(min(900, max(380, 16 * (T - lo) + 190))), margin=dict(l=110, r=20, t=70, b=115),
        annotations=[dict(xref="paper", yref="paper", x=0, y=0, yshift=-62, xanchor="left", yanchor="top", showarrow=False,
                          align="left", text=note, font=dict(size=12, color="#4a5568"), name="wavelengths")],
        xaxis=dict(title=dict(text="frequency pair (fast → slow)"), dtick=max(1, P // 8)),
        yaxis=dict(type="category", autorange="reversed", title=dict(text="position"), tickfont=dict(size=11)),
    )
    return go.Figure(data=[heat], layout=layout)


def learned_positions_figure(position: PositionRecord, pieces: Sequence[str] | None = None) -> go.Figure:
    """The learned position vectors 0..n-1 in the model's fixed 2D projection, as a path coloured
    by position; the positions the context uses (len(pieces)) outlined in red."""
    xy = np.asarray(position.learned_2d, np.float64).reshape(-1, 2)  # (n, 2)
    n = xy.shape[0]
    traces = [go.Scatter(
        x=xy[:, 0], y=xy[:, 1], mode="lines+markers", name="position vectors 0…" + str(n - 1),
        line=dict(color=MUTED, width=1), marker=dict(size=6, color=np.arange(n), colorscale="Viridis", cmin=0, cmax=max(n - 1, 1),
                                                     colorbar=dict(title=dict(text="position"), thickness=12, len=0.7)),
        customdata=np.arange(n), hovertemplate="position %{customdata}<br>(%{x:.2f}, %{y:.2f})<extra></extra>",
    )]
    if pieces:
        k = min(len(pieces), n)
        traces.append(go.Scatter(
            x=xy[:k, 0], y=xy[:k, 1], mode="markers", name=f"used by this context (0…{k - 1})",
            marker=dict(size=11, color="rgba(0,0,0,0)", line=dict(color=NEW_COLOR, width=2)),
            hovertext=[f"position {i}: {plot_piece(pieces[i], 20)}" for i in range(k)], hovertemplate="%{hovertext}<extra></extra>",
        ))
    ticks = sorted({0, n - 1, *range(0, n, max(1, n // 8))})
    anns = [dict(x=xy[i, 0], y=xy[i, 1], xref="x", yref="y", text=str(i), showarrow=False, yshift=10, font=dict(size=11),
                 name=f"position {i}") for i in ticks]
    title = (f"Learned positions: one trained vector per position ({n:,})<br><sup>added to each token's embedding; "
             "projected to 2D with the embeddings' fixed projection</sup>")
    layout = base_layout(title, height=500, margin=dict(l=60, r=20, t=100, b=50), annotations=anns,
                         legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom"),
                         xaxis=dict(title=dict(text="direction 1 (PCA)"), zeroline=False),
                         yaxis=dict(title=dict(text="direction 2 (PCA)"), zeroline=False))
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
        return _message_figure(
            "No position encoding",
            "This model adds no position information to its vectors.<br>It can still tell order apart: the causal mask lets "
            "each token<br>see only earlier tokens, so how many tokens it sees differs by position.")
    return _message_figure("Position information unavailable",
                           f"This model's position information ({plot_piece(str(position.kind), 20)}) cannot be drawn here.")


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
    hover = [f"key {k}: {plot_piece(swap.pieces[k], 24)}" + (" (swapped)" if k in (swap.i, swap.j) else "") for k in range(T)]
    traces = [
        go.Bar(x=keys, y=a[layer], name="original", marker=dict(color=PROMPT_COLOR), customdata=hover,
               hovertemplate="%{customdata}<br>original: %{y:.3f}<extra></extra>"),
        go.Bar(x=keys, y=b[layer], name=f"tokens {swap.i} and {swap.j} swapped", marker=dict(color=GEN_COLOR), customdata=hover,
               hovertemplate="%{customdata}<br>swapped: %{y:.3f}<extra></extra>"),
        go.Bar(x=list(range(L)), y=per_layer, xaxis="x2", yaxis="y2", name="max change per layer", showlegend=False,
               marker=dict(color=[NEW_COLOR if l == layer else MUTED for l in range(L)]),
               hovertemplate="block %{x}: largest change of a weight %{y:.3f}<extra></extra>"),
    ]
    same = swap.top_piece == swap.top_piece_swapped
    title = (f"Swap {plot_piece(swap.pieces[swap.i], 12)} ({swap.i}) ⇄ {plot_piece(swap.pieces[swap.j], 12)} ({swap.j}): "
             f"attention changes by up to {swap.max_abs_diff:.3f}"
             f"<br><sup>next token: {plot_piece(swap.top_piece, 16)} → {plot_piece(swap.top_piece_swapped, 16)}"
             f"{' (unchanged)' if same else ' (changed)'} · attention of the last query in block {layer} (the mean of its heads), keys in the original order</sup>")
    shade = [dict(type="rect", xref="x", yref="y domain", x0=k - 0.5, x1=k + 0.5, y0=0, y1=1, fillcolor="rgba(192,38,45,0.08)",
                  line=dict(width=0), layer="below", name=f"swapped {k}") for k in (swap.i, swap.j) if 0 <= k < T]
    layout = base_layout(
        title, height=560, margin=dict(l=60, r=20, t=100, b=60), barmode="group", bargap=0.2, shapes=shade,
        legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom"),
        xaxis=dict(domain=[0, 1], anchor="y", type="category", tickangle=-50, tickfont=dict(size=11)),
        yaxis=dict(domain=[0.42, 1.0], title=dict(text="attention weight, mean of heads"), rangemode="tozero"),
        xaxis2=dict(domain=[0, 1], anchor="y2", title=dict(text="block"), dtick=1 if L <= 16 else 2),
        yaxis2=dict(domain=[0.0, 0.18], title=dict(text="max change", font=dict(size=12)), rangemode="tozero"),
    )
    return go.Figure(data=traces, layout=layout)
