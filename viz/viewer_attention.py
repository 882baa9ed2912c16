"""The step viewer's attention panel: one layer's heatmaps at every step, shipped once.

A step's heatmap shows the causal matrix of its window (the last positions, at most the figure's
window w), its query row outlined. Each query row is written once, by its own step (the prefill
writes the prompt's block), so every step's matrix is a block of the last step's. The panel
therefore ships, per head, a band: for each query row r, its weights on keys r - w + 1 .. r (blank
where there are none). A frame names its window, `zwin: [lo, n, size]`: rows lo .. lo + n - 1 of
the band spread out over keys lo .. lo + size - 1, and `size - n` blank rows after them; its labels
are positions lo .. lo + size - 1. assets/viewer.js (windowed) and `windowed` below do the same.

While the whole context fits the window the axes hold every position (size = T, lo = 0), so the
matrix grows into a fixed frame. A trace whose rows are not written once each (never made by this
app, but a trace file can say anything) gets every step's own matrices instead, within a budget.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from pipeline.records import Trace

from . import attention

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


def windowed(band: np.ndarray, lo: int, n: int, size: int) -> np.ndarray:
    """A `zwin` frame's matrix from one head's band (T, w): (size, size), rows and keys from lo."""
    T, w = band.shape
    out = np.full((size, size), np.nan, dtype=band.dtype)
    for i in range(n):
        r = lo + i
        for j in range(i + 1):  # keys up to the row's own position; later ones are blank
            k = lo + j - (r - w + 1)
            if 0 <= k < w:
                out[i, j] = band[r, k]
    return out


def _band(m: np.ndarray, w: int) -> np.ndarray:
    """(H, T, T) causal matrices -> (H, T, w): row r's weights on keys r - w + 1 .. r, NaN where none."""
    H, T, _ = m.shape
    out = np.full((H, T, w), np.nan, dtype=np.float32)
    for r in range(T):
        k0 = max(0, r - w + 1)
        out[:, r, w - (r + 1 - k0):] = m[:, r, k0:r + 1]
    return out


def attention_panel(trace: Trace, steps: list[int], *, layer: int, head: int | None) -> dict:
    """One layer and head (None: every head, in a grid) at each step (see the module doc)."""
    from .viewer import animated_plain

    last = trace.steps[steps[-1]]
    pieces, T = list(last.context_pieces), last.position + 1
    kw = dict(steps=trace.steps, layer=layer, head=head, n_kv_heads=trace.model.n_kv_heads, pieces=pieces)
    if rows_written_once(trace, steps):
        full = attention.attention_matrix(trace.steps, upto=steps[-1], layers=[layer])[0]  # (H, T, T)
        figs = [attention.attention_figure_dict(step=s, matrix=full[:, :trace.steps[s].position + 1, :trace.steps[s].position + 1],
                                                max_tokens=attention.MAX_TOKENS, **kw) for s in steps]
        panel = _banded(trace, figs, steps, full[[head] if head is not None else slice(None)], pieces)
    else:
        w = attention_window([trace.steps[s].position + 1 for s in steps], heads=attention.MAX_GRID_HEADS if head is None else 1)
        figs = [attention.attention_figure_dict(step=s, max_tokens=w, **kw) for s in steps]
        panel = animated_plain(figs, steps)
    if len(figs[-1]["data"][0]["x"]) == T:  # the whole context fits: every head's axes hold every position
        labels = attention.position_labels(pieces, 0, T)
        lo = panel["layout"]
        for k in [k for k in lo if k.startswith(("xaxis", "yaxis"))]:
            span = [-0.5, T - 0.5] if k.startswith("x") else [T - 0.5, -0.5]
            lo[k] = {**lo[k], "categoryorder": "array", "categoryarray": labels, "range": span, "autorange": False}
    return panel


def _banded(trace: Trace, figs: list[dict], steps: list[int], full: np.ndarray, pieces: list[str]) -> dict:
    """viewer.animated_plain's panel of the figures without their matrices and labels (so its frames
    hold the layout that moves: title, outline), each trace given its band and every label, and
    each frame a `zwin` per trace. full: (heads, T, T), the figures' traces in order (a grid's first heads)."""
    from .viewer import animated_plain
    from .viewer_sampling import packed

    T = full.shape[-1]
    sizes = [len(f["data"][0]["x"]) for f in figs]  # each step's window
    w = max(sizes)
    fixed = sizes[-1] == T  # the window holds the whole context: the frame stays put, rows fill in
    panel = animated_plain([{**f, "data": [{k: v for k, v in tr.items() if k not in ("z", "x", "y")} for tr in f["data"]]}
                            for f in figs], steps)
    labels = attention.position_labels(pieces, 0, T)
    for tr, b in zip(panel["data"], _band(full[:len(panel["data"])], w)):
        tr.update(z={**packed(b, "f4"), "shape": f"{T}, {w}"}, x=labels, y=labels)
    for fr, s, n in zip(panel["frames"], steps, sizes):
        lo = 0 if fixed else trace.steps[s].position + 1 - n  # the window: the step's last n positions
        fr.update(traces=list(range(len(panel["data"]))), data=[{"type": "heatmap", "zwin": [lo, n, T if fixed else n]} for _ in panel["data"]])
    return panel
