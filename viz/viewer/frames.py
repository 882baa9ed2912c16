"""A panel's figures over the steps as one Plotly figure with a frame per step (for the viewer bundle).

`animated` keeps the first step's figure whole and gives each frame only what moves between steps,
down to the nested attribute; `animated_plain` does the same for figures built as plain data (viz's
*_dict builders). The page merges a frame into the figure (assets/viewer_frames.js, merged) and redraws it.
"""
from __future__ import annotations

import json
from typing import Sequence

import plotly.graph_objects as go
from plotly.io.json import to_json_plotly

FIXED_LAYOUT = ("height", "margin")  # the largest over the steps, in the figure: a frame never resizes the panel


def figure_json(fig: go.Figure) -> dict:
    """Plotly's own JSON of a figure (numpy arrays as typed arrays), as plain Python data."""
    return json.loads(fig.to_json())


def plain_json(fig: dict) -> dict:
    """Plotly's JSON of a figure given as plain data (viz's *_dict builders), unchecked: numpy as lists."""
    return json.loads(to_json_plotly(fig))


def animated_plain(figs: Sequence[dict], steps: Sequence[int]) -> dict:
    """animated() for figures as plain data: only the first goes through Plotly's checks (the one
    shipped whole, with its template); the frames hold the plain data's JSON. Plotly's checks are
    slow enough that running them on every step's figure would be most of a bundle's build time."""
    panel = animated([plain_json(f) for f in figs], steps)
    base = figure_json(go.Figure(figs[0]))
    kept = {k: panel["layout"][k] for k in (*FIXED_LAYOUT, "meta") if k in panel["layout"]}
    return {**panel, "data": base["data"], "layout": {**base["layout"], **kept}}


def _largest(layouts: list[dict]) -> dict:
    """The largest height and margins over some layouts."""
    out = {}
    if any("height" in lo for lo in layouts):
        out["height"] = max(lo.get("height", 0) for lo in layouts)
    margins = [lo.get("margin", {}) for lo in layouts]
    if any(margins):
        out["margin"] = {k: max(m.get(k, 0) for m in margins) for k in sorted({k for m in margins for k in m})}
    return out


def _changing(dicts: Sequence[dict], skip=()) -> list[str]:
    """Keys whose value differs between any of the dicts and the first (missing counts as None)."""
    keys = {k for d in dicts for k in d} - set(skip)
    return sorted(k for k in keys if any(d.get(k) != dicts[0].get(k) for d in dicts[1:]))


def _moving(dicts: Sequence[dict]) -> dict:
    """The keys whose value differs between any of the dicts and the first, as a tree: a key whose
    values are all objects maps to the tree of its own moving keys, any other moving key to None."""
    tree = {}
    for k in _changing(dicts):
        vals = [d.get(k) for d in dicts]
        tree[k] = _moving(vals) if all(isinstance(v, dict) and "bdata" not in v for v in vals) else None  # (a typed array: whole)
    return tree


def _pick(d: dict, tree: dict) -> dict:
    """The part of d that a _moving tree names (a key missing from d: None)."""
    return {k: _pick(d[k], sub) if sub is not None else d.get(k) for k, sub in tree.items()}


def animated(figs: Sequence[dict], steps: Sequence[int]) -> dict:
    """One figure (the first step's) with a frame per step holding only what changes: the traces
    that move, and of those only the attributes that move, down to the nested one (a marker's
    colours, not the whole marker). The rest stays in the figure's trace, and the page merges a frame
    into it (viewer_frames.js merged): an array that does not move stays the same object, which Plotly.react
    needs to see to redraw only what moved (it redraws the whole figure for a new copy of an array).

    figs: one figure_json per step, all with the same traces in the same order."""
    base = figs[0]
    n = len(base["data"])
    assert all(len(f["data"]) == n for f in figs), "every step's figure needs the same traces (see keep_empty options)"
    attrs = {i: _moving([f["data"][i] for f in figs]) for i in range(n)}
    moving = [i for i in range(n) if attrs[i]]
    changing = _changing([f["layout"] for f in figs], skip=(*FIXED_LAYOUT, "template", "meta"))
    empty = {"shapes": [], "annotations": []}
    layout = {**base["layout"], **_largest([f["layout"] for f in figs]), "meta": {"step": int(steps[0])}}
    frames = [{
        "name": str(int(s)), "traces": moving,
        "data": [{"type": f["data"][i]["type"], **_pick(f["data"][i], attrs[i])} for i in moving],
        "layout": {**{k: f["layout"].get(k, empty.get(k)) for k in changing}, "meta": {"step": int(s)}},
    } for s, f in zip(steps, figs)]
    return {"data": base["data"], "layout": layout, "frames": frames}
