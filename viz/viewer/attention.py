"""The step viewer's attention panel: one layer's heatmaps at every step, shipped once.

A step's heatmap shows the causal matrix of its window (the last positions, at most the figure's
window w), its query row outlined; the grid tiles every head's matrix into one heatmap
(viz.attention). Each query row is written once, by its own step (the prefill writes the prompt's
block), so every step's matrix is a block of the last step's. The panel therefore ships, per head,
a band: for each query row r, its weights on keys r - w + 1 .. r (blank where there are none). A
frame names its window, `zwin: [lo, n, size]`: rows lo .. lo + n - 1 of the band spread out over
keys lo .. lo + size - 1, and `size - n` blank rows after them, tiled as the panel's `tiles` say;
its labels are positions lo .. lo + size - 1. assets/viewer_frames.js (windowed) and `windowed` below do
the same.

Every step has the same frame (size = w, or T while the whole context fits, the matrix growing into
it), so the tiles, titles and axes never move. A trace whose rows are not written once each (never
made by this app, but a trace file can say anything) gets every step's own matrices instead,
within a budget.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from pipeline.trace.records import Trace

from viz import attention
from viz.viewer.frames import animated_plain
from viz.viewer.sampling import packed

ATTN_CELLS = 1_000_000  # heatmap cells over all frames and heads when every step ships its own (4 bytes each)


def attention_window(sizes: Sequence[int], *, heads: int = 1, budget: int = ATTN_CELLS, floor: int = 16) -> int:
    """The heatmap window (last positions shown) keeping every frame's cells, of every head shown,
    within the budget (for frames that carry their own matrices)."""
    w = attention.MAX_TOKENS
    while w > floor and heads * sum(min(T, w) ** 2 for T in sizes) > budget:
        w = max(floor, int(w * 0.9))
    return w


def rows_written_once(trace: Trace, steps: Sequence[int]) -> bool:
    """Each step's attention is a block of the last step's: positions increase step by step and
    only the first step holds a stored matrix (attention.attention_matrix writes nothing twice)."""
    pos = [trace.steps[s].position for s in range(steps[-1] + 1)]
    return all(b > a for a, b in zip(pos, pos[1:])) and all(trace.steps[s].attention_matrix is None for s in range(1, steps[-1] + 1))


def windowed(bands: np.ndarray, lo: int, n: int, size: int, cols: int = 1, gap: int = 0) -> np.ndarray:
    """A `zwin` frame's matrix from the bands (heads, T, w): each head's (size, size) window, rows and
    keys from lo, tiled as attention.tiled does (one head: its window alone)."""
    k_, T, w = bands.shape
    out = np.full((k_, size, size), np.nan, dtype=bands.dtype)
    for i in range(n):
        r = lo + i
        for j in range(i + 1):  # keys up to the row's own position; later ones are blank
            k = lo + j - (r - w + 1)
            if 0 <= k < w:
                out[:, i, j] = bands[:, r, k]
    return attention.tiled(out, cols, gap)


def _band(m: np.ndarray, w: int) -> np.ndarray:
    """(H, T, T) causal matrices -> (H, T, w): row r's weights on keys r - w + 1 .. r, NaN where none."""
    H, T, _ = m.shape
    out = np.full((H, T, w), np.nan, dtype=np.float32)
    for r in range(T):
        k0 = max(0, r - w + 1)
        out[:, r, w - (r + 1 - k0):] = m[:, r, k0:r + 1]
    return out


def attention_panel(trace: Trace, steps: list[int], *, layer: int, head: int | None) -> dict:
    """One layer and head (None: every head, tiled in a grid) at each step (see the module doc). Every
    step's figure holds the same frame of positions: the window, or the whole context if shorter."""
    last = trace.steps[steps[-1]]
    pieces, T = list(last.context_pieces), last.position + 1
    H = trace.model.n_heads
    shown = min(H, attention.MAX_GRID_HEADS) if head is None else 1
    kw = dict(steps=trace.steps, layer=layer, head=head, n_kv_heads=trace.model.n_kv_heads, pieces=pieces)
    if rows_written_once(trace, steps):
        w = attention.window_size(shown, grid=head is None)
        full = attention.attention_matrix(trace.steps, upto=steps[-1], layers=[layer])[0]  # (H, T, T)
        figs = [attention.attention_figure_dict(step=s, matrix=full[:, :trace.steps[s].position + 1, :trace.steps[s].position + 1],
                                                frame=min(T, w), **kw) for s in steps]
        return _banded(trace, figs, steps, full[[head] if head is not None else slice(0, shown)], pieces, min(T, w), head is None)
    w = attention_window([trace.steps[s].position + 1 for s in steps], heads=shown)
    return animated_plain([attention.attention_figure_dict(step=s, max_tokens=w, frame=min(T, w), **kw) for s in steps], steps)


def _banded(trace: Trace, figs: list[dict], steps: list[int], full: np.ndarray, pieces: list[str], size: int, grid: bool) -> dict:
    """animated_plain's panel of the figures without their matrices and labels (so its frames
    hold the layout that moves: title, outlines), its trace given the band of each head shown and
    every label, `tiles` naming the grid, and each frame its window `zwin`. full: (heads shown, T, T)."""
    T = full.shape[-1]
    shipped = ("z", "x", "y", "customdata")  # matrices, labels, heads per cell: the bands and the tiles stand for them
    panel = animated_plain([{**f, "data": [{k: v for k, v in tr.items() if k not in shipped} for tr in f["data"]]}
                            for f in figs], steps)
    (tr,) = panel["data"]
    tr.update(z={**packed(_band(full, size), "f4"), "shape": f"{len(full)}, {T}, {size}"}, x=attention.position_labels(pieces, 0, T))
    if grid:  # each cell's head, the same at every step (one frame): once, as bytes
        who = figs[0]["data"][0]["customdata"]
        tr["customdata"] = {**packed(who, "i1"), "shape": f"{who.shape[0]}, {who.shape[1]}"}
    panel["tiles"] = {"cols": attention.grid_tiles(len(full))[0], "gap": attention.tile_gap(size)} if grid else {"cols": 1, "gap": 0}
    for fr, s in zip(panel["frames"], steps):
        T_s = trace.steps[s].position + 1
        lo = max(0, T_s - size)  # the window: the step's last positions
        fr.update(traces=[0], data=[{"type": "heatmap", "zwin": [lo, T_s - lo, size]}])
    return panel
