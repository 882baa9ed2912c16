"""The context's input embeddings in the model's fixed 2D projection (PCA of its embedding matrix)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from pipeline.trace.records import PromptRecord, StepRecord, VocabCloud

from viz.style import GEN_COLOR, MUTED, NEW_COLOR, PROMPT_COLOR, base_layout, plot_piece
from viz.text import language, t

MAX_LABELS = 60


def axis_ranges(prompt: PromptRecord, steps: Sequence[StepRecord], cloud: VocabCloud | None, *, pad: float = 0.06):
    """([x0, x1], [y0, y1]) over the cloud, the prompt and every step of the trace (not only
    those shown), so points stay put while the step slider moves."""
    parts = [np.asarray(prompt.embed_2d, np.float64).reshape(-1, 2)]  # (T, 2)
    parts += [np.asarray([s.embed_2d for s in steps], np.float64).reshape(-1, 2)]  # (n_steps, 2)
    if cloud is not None:
        parts.append(np.asarray(cloud.xy, np.float64).reshape(-1, 2))  # (n, 2)
    pts = np.concatenate(parts)
    pts = pts[np.isfinite(pts).all(axis=1)]
    if not len(pts):
        return [-1.0, 1.0], [-1.0, 1.0]
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    span = np.maximum(hi - lo, 1e-6)
    lo, hi = lo - pad * span, hi + pad * span
    return [float(lo[0]), float(hi[0])], [float(lo[1]), float(hi[1])]


def _labelled(ids: list[int], max_labels: int) -> set[int]:
    """Positions to label: the most recent occurrence of each distinct token, newest first, at most max_labels."""
    seen, out = set(), set()
    for k in range(len(ids) - 1, -1, -1):
        if len(out) >= max_labels:
            break
        if ids[k] not in seen:
            seen.add(ids[k])
            out.add(k)
    return out


_CLOUDS: dict = {}  # (id, language) -> (cloud, its trace): a model's cloud is the same at every step of every trace


def _token(piece: str, tid) -> str:
    """A point's token in its hover: the piece (escaped) and its id."""
    return t("embeddings.token", piece=plot_piece(piece), id=int(tid))


def _cloud_trace(cloud: VocabCloud) -> dict:
    """The grey vocabulary cloud as a trace (made once per cloud and language: its 1,500 hover texts)."""
    key = (id(cloud), language())
    hit = _CLOUDS.get(key)
    if hit is None or hit[0] is not cloud:
        if len(_CLOUDS) > 8:
            _CLOUDS.clear()
        hit = _CLOUDS[key] = (cloud, dict(
            type="scattergl", x=cloud.xy[:, 0], y=cloud.xy[:, 1], mode="markers", name=t("embeddings.cloud"),
            marker=dict(size=4, color=MUTED, opacity=0.35),
            hovertext=[_token(p, i) for p, i in zip(cloud.pieces, cloud.ids)],
            hovertemplate="%{hovertext}<extra>" + t("embeddings.cloud_extra") + "</extra>"))
    return hit[1]


def embeddings_figure(*, prompt: PromptRecord, steps: Sequence[StepRecord], step: int | None, cloud: VocabCloud | None,
                      max_labels: int = MAX_LABELS, keep_empty: bool = False) -> go.Figure:
    """embeddings_figure_dict's figure, checked by Plotly."""
    return go.Figure(embeddings_figure_dict(prompt=prompt, steps=steps, step=step, cloud=cloud, max_labels=max_labels, keep_empty=keep_empty))


def embeddings_figure_dict(*, prompt: PromptRecord, steps: Sequence[StepRecord], step: int | None, cloud: VocabCloud | None,
                           max_labels: int = MAX_LABELS, keep_empty: bool = False) -> dict:
    """Grey vocabulary cloud, prompt tokens (blue), generated tokens of steps[0..step] (orange),
    the newest (steps[step]) larger in red. Axis ranges are fixed over the whole trace.

    keep_empty: the generated-tokens trace is there even while it is empty (step 0), so every
    step's figure has the same traces (animation frames replace traces by index)."""
    xr, yr = axis_ranges(prompt, steps, cloud)
    traces = []
    if cloud is not None and len(cloud.ids):
        # WebGL: the cloud never moves, and as SVG its 1,500 points would be most of each step's redraw
        traces.append(_cloud_trace(cloud))
    shown = [] if step is None else list(steps[: step + 1])
    T0 = len(prompt.token_ids)
    labelled = _labelled(list(prompt.token_ids) + [s.token_id for s in shown], max_labels)  # context positions

    pxy = np.asarray(prompt.embed_2d, np.float32).reshape(-1, 2)  # (T0, 2)
    traces.append(dict(
        type="scatter", x=pxy[:, 0], y=pxy[:, 1], mode="markers+text", name=t("embeddings.prompt"),
        marker=dict(size=8, color=PROMPT_COLOR, opacity=0.85),
        text=[plot_piece(p, 12) if k in labelled else "" for k, p in enumerate(prompt.pieces)],
        textposition="top center", textfont=dict(size=11, color=PROMPT_COLOR),
        hovertext=[t("embeddings.prompt_hover", position=k, token=_token(p, i)) for k, (p, i) in enumerate(zip(prompt.pieces, prompt.token_ids))],
        hovertemplate="%{hovertext}<br>(%{x:.2f}, %{y:.2f})<extra></extra>",
    ))
    if len(shown) > 1 or (keep_empty and shown):
        old = shown[:-1]
        gxy = np.asarray([s.embed_2d for s in old], np.float32).reshape(-1, 2)  # (step, 2)
        traces.append(dict(
            type="scatter", x=gxy[:, 0], y=gxy[:, 1], mode="markers+text", name=t("embeddings.generated"),
            marker=dict(size=9, color=GEN_COLOR, opacity=0.9, symbol="diamond"),
            text=[plot_piece(s.piece, 12) if T0 + i in labelled else "" for i, s in enumerate(old)],
            textposition="top center", textfont=dict(size=11, color=GEN_COLOR),
            hovertext=[t("embeddings.step_hover", step=i, token=_token(s.piece, s.token_id)) for i, s in enumerate(old)],
            hovertemplate="%{hovertext}<br>(%{x:.2f}, %{y:.2f})<extra></extra>",
        ))
    if shown:
        s = shown[-1]
        traces.append(dict(
            type="scatter", x=[float(s.embed_2d[0])], y=[float(s.embed_2d[1])], mode="markers+text", name=t("embeddings.newest", step=len(shown) - 1),
            marker=dict(size=16, color=NEW_COLOR, symbol="star", line=dict(width=1, color="white")),
            text=[f"<b>{plot_piece(s.piece, 16)}</b>"], textposition="top center", textfont=dict(size=14, color=NEW_COLOR),
            hovertext=[t("embeddings.newest_hover", step=len(shown) - 1, token=_token(s.piece, s.token_id))],
            hovertemplate="%{hovertext}<br>(%{x:.2f}, %{y:.2f})<extra></extra>",
        ))
    title = t("embeddings.title_step", step=len(shown) - 1) if shown else t("embeddings.title")
    layout = base_layout(title, height=500, legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom"),
                         margin=dict(l=60, r=20, t=110, b=50),
                         xaxis=dict(range=xr, autorange=False, title=dict(text=t("embeddings.axis", n=1)), zeroline=False),
                         yaxis=dict(range=yr, autorange=False, title=dict(text=t("embeddings.axis", n=2)), zeroline=False))
    return {"data": traces, "layout": layout}
