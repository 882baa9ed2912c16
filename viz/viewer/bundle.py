"""The viewer bundle: every panel that follows the step, built once by viz/, with Plotly frames.

`viewer_bundle(trace)` is plain JSON-ready data for the viewer's scripts (assets/viewer*.js), which
scrub, play and reshape the distribution in the browser with no request. Each panel is one Plotly figure
(the first step's, drawn by the panel's own viz function) plus one frame per step holding only
the traces and layout keys that change from step to step (viz.viewer.frames); every frame's
`layout.meta.step` names its step. Axis ranges are fixed over the whole trace so frames never
rescale. The attention panel's frames name windows of one band per head instead
(viz.viewer.attention).

The distribution panel also carries, per step, the labels and hover texts of its candidates
before any filter greys them, and viz.viewer.sampling's tables: the browser recomputes the
bars for any slider position with pipeline.sampling's arithmetic.
"""
from __future__ import annotations

import json

from pipeline.indices import clamp_index
from pipeline.trace.records import Trace

from viz import page, panels
from viz.panels import dist_style
from viz.style import plot_piece
from viz.viewer.sampling import sampling_bundle

SCHEMA = "llm-viewer-bundle/1"
MAX_FRAMES = 256  # steps a bundle holds frames for; a longer trace is cut (and says so)


def frame_steps(trace: Trace, max_frames: int) -> list[int]:
    return list(range(min(len(trace.steps), max_frames)))


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
        "settings": {"temperature": st.temperature, "top_k": st.top_k, "top_p": st.top_p, "min_p": st.min_p,
                     "repetition_penalty": st.repetition_penalty},
        "attention": {"layer": layer, "head": head, "metric": metric},
        "steps": step_labels(trace, steps),
        # every panel that follows the step (viz.panels), in page order; the page draws what this holds
        "panels": {p.elem_id: p.frames(trace, steps, layer=layer, head=head, metric=metric) for p in panels.STEP_PANELS},
        "dist_style": dist_style(),
        # per step of the whole trace (steps past the frames too): HTML the page writes in place
        "html": page.step_html(trace),
        "sampling": sampling_bundle([trace.steps[s] for s in steps], penalty=st.repetition_penalty, min_p=st.min_p,
                                    vocab_size=trace.model.vocab_size),
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
