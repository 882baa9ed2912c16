"""The viewer bundle: every panel that follows the step, built once by viz/, with Plotly frames.

`viewer_bundle(trace)` is plain JSON-ready data for the viewer's scripts (assets/viewer*.js), which
scrub, play and reshape the distribution in the browser with no request. Each panel is one Plotly figure
(the first step's, drawn by the panel's own viz function) plus one frame per step holding only
the traces and layout keys that change from step to step (viz.viewer_frames); every frame's
`layout.meta.step` names its step. Axis ranges are fixed over the whole trace so frames never
rescale. The attention panel's frames name windows of one band per head instead
(viz.viewer_attention).

The distribution panel also carries, per step, the labels and hover texts of its candidates
before any filter greys them, and viz.viewer_sampling's tables: the browser recomputes the
bars for any slider position with pipeline.sampling's arithmetic.
"""
from __future__ import annotations

import json
import math

from pipeline.indices import clamp_index
from pipeline.records import Trace

from . import attention, distribution, embeddings, kv, page
from .style import MUTED, NEW_COLOR, PROMPT_COLOR, plot_piece
from .viewer_attention import attention_panel
from .viewer_frames import animated_plain
from .viewer_sampling import sampling_bundle

SCHEMA = "llm-viewer-bundle/1"
MAX_FRAMES = 256  # steps a bundle holds frames for; a longer trace is cut (and says so)
N_CANDIDATES = 20  # bars of the distribution panel (viz.distribution's default)

# How viz.distribution marks a candidate the sampling settings removed (tests pin it to the figure).
DIST_STYLE = {
    "kept_color": PROMPT_COLOR, "removed_color": MUTED, "rest_color": "#cbd5e0",
    "removed_label": f"<span style='color:{MUTED}'>{{}}</span>",
    "removed_hover": "<br><b>removed</b> by the sampling settings",
    "cut_line": dict(type="line", xref="paper", x0=0, x1=1, yref="y", line=dict(color=NEW_COLOR, width=1.5, dash="dash"), name="cut-off"),
    "cut_label": dict(xref="paper", x=1, xanchor="left", yref="y", yanchor="middle", showarrow=False, text="cut-off",
                      font=dict(size=11, color=NEW_COLOR), name="cut-off"),
}


def frame_steps(trace: Trace, max_frames: int) -> list[int]:
    return list(range(min(len(trace.steps), max_frames)))


def _unmarked(labels: list, hover: list, n: int) -> tuple[list, list]:
    """A step's candidate labels and hover texts with the marks of removed candidates taken off."""
    pre, post = DIST_STYLE["removed_label"].split("{}")
    mark = DIST_STYLE["removed_hover"]
    plain = [lab[len(pre):-len(post)] if k < n and lab.startswith(pre) and lab.endswith(post) else lab for k, lab in enumerate(labels)]
    return plain, [h[:-len(mark)] if k < n and h.endswith(mark) else h for k, h in enumerate(hover)]


def distribution_panel(trace: Trace, steps: list[int], *, n: int = N_CANDIDATES) -> dict:
    """The distribution under the trace's own settings per step, plus each step's candidates
    as they read with nothing removed (the browser greys what its settings remove)."""
    st, V = trace.settings, trace.model.vocab_size
    figs, plain = [], []
    for s in steps:
        step = trace.steps[s]
        fig = distribution.distribution_figure_dict(
            step, temperature=st.temperature, top_k=st.top_k, top_p=st.top_p, repetition_penalty=st.repetition_penalty, n=n, vocab_size=V)
        figs.append(fig)
        bars = fig["data"][0]
        labels, hover = _unmarked(list(bars["y"]), list(bars["customdata"]), len(bars["y"]) - 1)
        rank = next((k for k, i in enumerate(step.top_ids) if int(i) == step.token_id), -1)  # the sampled token's bar
        plain.append({"labels": labels, "hover": hover, "position": step.position + 1, "entropy": step.entropy + 0.0, "rank": rank})
    panel = animated_plain(figs, steps)
    panel["candidates"] = plain
    return panel


def overview_panel(trace: Trace, steps: list[int], *, metric: str = "entropy") -> dict:
    """Per block and head, one number for the step's query; one colour scale for every step."""
    K = trace.steps[steps[-1]].position + 1
    zmax = max(math.log2(K), 1e-9) if metric == "entropy" else 1.0
    return animated_plain([attention.attention_overview_figure_dict(step=trace.steps[s], n_kv_heads=trace.model.n_kv_heads,
                                                                    metric=metric, zmax=zmax) for s in steps], steps)


def embeddings_panel(trace: Trace, steps: list[int]) -> dict:
    return animated_plain([embeddings.embeddings_figure_dict(prompt=trace.prompt, steps=trace.steps, step=s, cloud=trace.vocab_cloud,
                                                             keep_empty=True) for s in steps], steps)


def kv_panel(trace: Trace, steps: list[int]) -> dict:
    return animated_plain([kv.kv_timing_figure_dict(steps=trace.steps, step=s, model=trace.model) for s in steps], steps)


def step_labels(trace: Trace, steps: list[int]) -> list[dict]:
    """What the step slider names: the step, its position and its token (escaped for HTML)."""
    return [{"index": s, "position": trace.steps[s].position, "piece": plot_piece(trace.steps[s].piece, 24),
             "phase": trace.steps[s].phase} for s in steps]


def viewer_bundle(trace: Trace, *, layer: int = 0, head: int | None = 0, metric: str = "entropy", max_frames: int = MAX_FRAMES) -> dict:
    """Every panel that follows the step, their frames, and the sampling tables (see the module doc)."""
    assert trace.steps, "a trace with no steps has nothing to view"
    layer = clamp_index(layer, trace.model.n_layers)
    head = None if head is None else clamp_index(head, trace.model.n_heads)  # None: every head, in a grid
    steps = frame_steps(trace, max_frames)
    st = trace.settings
    return {
        "schema": SCHEMA,
        "n_steps": len(steps), "n_steps_in_trace": len(trace.steps),
        "settings": {"temperature": st.temperature, "top_k": st.top_k, "top_p": st.top_p, "repetition_penalty": st.repetition_penalty},
        "attention": {"layer": layer, "head": head, "metric": metric},
        "steps": step_labels(trace, steps),
        "panels": {
            "dist-plot": distribution_panel(trace, steps),
            "attn-plot": attention_panel(trace, steps, layer=layer, head=head),
            "attn-overview": overview_panel(trace, steps, metric=metric),
            "emb-plot": embeddings_panel(trace, steps),
            "kv-plot": kv_panel(trace, steps),
        },
        "dist_style": DIST_STYLE,
        # per step of the whole trace (steps past the frames too): HTML the page writes in place
        "html": page.step_html(trace),
        "sampling": sampling_bundle([trace.steps[s] for s in steps], penalty=st.repetition_penalty),
    }


def bundle_json(bundle: dict) -> str:
    """Compact JSON, safe inside an HTML <script> element (no '<' at all)."""
    return json.dumps(bundle, ensure_ascii=False, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def sizes(bundle: dict) -> dict[str, int]:
    """Bytes of compact JSON per part of a bundle (panels by id, the sampling tables, the rest)."""
    out = {k: len(json.dumps(v, separators=(",", ":")).encode()) for k, v in bundle["panels"].items()}
    out["sampling"] = len(json.dumps(bundle["sampling"], separators=(",", ":")).encode())
    out["total"] = len(bundle_json(bundle).encode())
    return out
