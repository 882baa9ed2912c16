"""The viewer bundle: each frame carries its own step's numbers and names its step, only what
changes moves, ranges stay put, frames are capped, the sampling tables cover what top-k needs."""
import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from tests.synthetic import make_trace
from viz import attention, distribution
from viz.viewer import bundle as viewer
from viz.panels import STEP_IDS as IDS
from viz.viewer.bundle import bundle_json, dist_style, sizes, viewer_bundle
from viz.viewer.attention import attention_panel, windowed
from viz.viewer.sampling import TEMPERATURES, TOP_K_MAX, TOP_PS, head_size, min_p_reach, sort_order, step_tables, unpacked

ROOT = Path(__file__).resolve().parents[2]


def arr(v):
    """A figure value as numpy: Plotly's typed-array JSON form or a plain list."""
    if isinstance(v, dict) and "bdata" in v:
        a = unpacked(v)
        return a.reshape([int(x) for x in v["shape"].split(",")]) if "shape" in v else a
    return np.asarray(v, dtype=np.float64)


@pytest.fixture(scope="module")
def trace():
    return make_trace(n_steps=6, prompt_len=7, top_n=30)


@pytest.fixture(scope="module")
def bundle(trace):
    return viewer_bundle(trace, layer=1, head=2)


def test_every_panel_has_one_frame_per_step_naming_its_step(bundle, trace):
    assert tuple(bundle["panels"]) == IDS and bundle["n_steps"] == len(trace.steps)
    for pid, p in bundle["panels"].items():
        assert p["layout"]["meta"] == {"step": 0}, pid
        assert [f["name"] for f in p["frames"]] == [str(s) for s in range(len(trace.steps))], pid
        assert [f["layout"]["meta"]["step"] for f in p["frames"]] == list(range(len(trace.steps))), pid
        assert all(len(f["traces"]) == len(f["data"]) for f in p["frames"]), pid


def test_frames_carry_the_steps_own_numbers(bundle, trace):
    P = bundle["panels"]
    for s, step in enumerate(trace.steps):
        raw, fin = P["dist-plot"]["frames"][s]["data"]  # the two bars: temperature 1, and as sampled
        np.testing.assert_allclose(arr(raw["x"])[:20], step.top_probs[:20], rtol=1e-6)
        np.testing.assert_allclose(arr(fin["x"])[:20], step.top_final_probs[:20], rtol=1e-6)
        assert f"step {step.index}<br><span style='font-size:13px'>position {step.position + 1} in the context</span><br>" in P["dist-plot"]["frames"][s]["layout"]["title"]["text"]

        frame = P["attn-plot"]["frames"][s]["data"][0]  # block 1, head 2: the band, spread out over the step's window
        z = windowed(arr(P["attn-plot"]["data"][0]["z"]), *frame["zwin"])
        want = attention.attention_matrix(trace.steps, upto=s, layers=[1])[0, 2]
        n = step.position + 1
        low = np.tril_indices(n)
        assert frame["zwin"] == [0, n, trace.steps[-1].position + 1]
        np.testing.assert_array_equal(z[low], want[low])
        assert np.isnan(z[np.triu_indices(n, 1)]).all() and np.isnan(z[n:]).all()

        ent, _, _ = attention.overview_values(step.attention, "entropy")
        np.testing.assert_allclose(arr(P["attn-overview"]["frames"][s]["data"][0]["z"]), ent, rtol=1e-6)

        emb = dict(zip(P["emb-plot"]["frames"][s]["traces"], P["emb-plot"]["frames"][s]["data"]))
        newest = emb[max(emb)]
        assert newest["name"] == f"newest (step {s})"
        np.testing.assert_allclose([arr(newest["x"])[0], arr(newest["y"])[0]], step.embed_2d, rtol=1e-6)

        ring, bar = P["kv-plot"]["frames"][s]["layout"]["shapes"]  # the step's bytes ringed, its bar outlined
        assert (ring["xanchor"], ring["yanchor"]) == (step.index, step.kv_cache_bytes) and bar["y1"] == step.ms


def test_only_what_changes_moves_and_ranges_stay_put(bundle, trace):
    P = bundle["panels"]
    # the vocabulary cloud stays in the figure (the prompt's labels move: the newest copy of a token is labelled)
    assert all(0 not in f["traces"] and f["traces"][-2:] == [2, 3] for f in P["emb-plot"]["frames"])
    # the KV panel's step moves only shapes: Plotly redraws them alone (a moved trace redraws the figure)
    assert all(f["traces"] == [] and set(f["layout"]) == {"shapes", "meta"} for f in P["kv-plot"]["frames"])
    assert P["attn-overview"]["layout"].get("height") and "height" not in P["dist-plot"]["frames"][2]["layout"]
    # one colour scale for every step: in the figure, never in a frame
    assert P["attn-overview"]["data"][0]["zmax"] == math.log2(trace.steps[-1].position + 1)
    assert all("zmax" not in f["data"][0] and set(f["data"][0]) <= {"type", "z", "hovertemplate"} for f in P["attn-overview"]["frames"])
    T = trace.steps[-1].position + 1
    xa, ya = P["attn-plot"]["layout"]["xaxis"], P["attn-plot"]["layout"]["yaxis"]
    assert xa["range"] == [-0.5, T - 0.5] and ya["range"] == [T - 0.5, -0.5] and xa["autorange"] is False
    assert P["emb-plot"]["layout"]["xaxis"]["autorange"] is False
    # the grid's tiles keep one frame: no step moves its axes or its heads' titles, only the outlines and the title
    grid = attention_panel(trace, viewer.frame_steps(trace, 99), layer=0, head=None)
    cols, gap = grid["tiles"]["cols"], grid["tiles"]["gap"]
    assert (cols, gap) == (3, attention.tile_gap(T)) and not any(k.startswith(("xaxis2", "yaxis2")) for k in grid["layout"])
    assert grid["layout"]["xaxis"]["range"] == [-0.5, cols * T + (cols - 1) * gap - 0.5]
    assert all(set(f["layout"]) == {"shapes", "title", "meta"} for f in grid["frames"])
    # the distribution panel is as tall as its tallest step: a frame never resizes it
    heights = [distribution.distribution_figure(s, temperature=0.8, top_p=0.9, vocab_size=50).layout.height for s in trace.steps]
    assert P["dist-plot"]["layout"]["height"] == max(heights)


def test_attention_frames_name_windows_only_when_rows_are_written_once(trace):
    """A band of the last step's matrices stands for every step's only when each row is written once;
    a trace where a later step rewrote rows gets every step's own matrices."""
    steps = viewer.frame_steps(trace, 99)
    grow = attention_panel(trace, steps, layer=0, head=None)
    assert all(set(d) == {"type", "zwin"} for f in grow["frames"] for d in f["data"])
    assert len(grow["frames"][0]["data"]) == 1 and grow["data"][0]["z"]["shape"].startswith(f"{trace.model.n_heads}, ")  # a band per head
    bent = dataclasses.replace(trace, steps=list(trace.steps))
    third = bent.steps[3]
    L, H = np.asarray(third.attention).shape[:2]
    zeros = np.zeros((L, H, third.position, third.position), np.float32)  # step 3 rewrites every earlier row
    bent.steps[3] = dataclasses.replace(third, attention_matrix=zeros)
    every = attention_panel(bent, steps, layer=0, head=2)
    assert all("z" in f["data"][0] and "zwin" not in f["data"][0] for f in every["frames"])
    low = np.tril_indices(third.position)
    assert arr(every["frames"][3]["data"][0]["z"])[low].max() == 0 and arr(every["frames"][2]["data"][0]["z"])[low].max() > 0


@pytest.mark.parametrize("head", [None, 1])
def test_a_sliding_window_is_each_steps_own_figure(monkeypatch, head):
    """A context longer than the heatmap's window: each frame's window of the bands, tiled, and its
    labels are exactly viz.attention's figure for that step in the panel's frame (every head of the
    grid, or the one head)."""
    monkeypatch.setattr(attention, "MAX_TOKENS", 12)
    trace = make_trace(n_steps=20, prompt_len=8, n_heads=3, n_kv_heads=1, seed=4)
    steps = viewer.frame_steps(trace, 99)
    panel = attention_panel(trace, steps, layer=1, head=head)
    pieces = list(trace.steps[-1].context_pieces)
    bands, tiles = arr(panel["data"][0]["z"]), panel["tiles"]
    for s in steps:
        want = attention.attention_figure(steps=trace.steps, step=s, layer=1, head=head, n_kv_heads=1, pieces=pieces, max_tokens=12, frame=12)
        frame = panel["frames"][s]
        assert frame["layout"]["title"]["text"] == want.layout.title.text
        lo, n, size = frame["data"][0]["zwin"]
        assert size == 12 and n == min(12, trace.steps[s].position + 1)
        np.testing.assert_array_equal(windowed(bands, lo, n, size, **tiles), np.asarray(want.data[0].z, np.float32), err_msg=f"step {s}")
        labels = [x if j < n else f"{lo + j} ?" for j, x in enumerate(panel["data"][0]["x"][lo:lo + size])]  # (assets/viewer_frames.js)
        assert [x.replace(attention.TAG, "") for x in want.data[0].x if not x.startswith("gap ")] == labels * tiles["cols"]
    assert panel["frames"][-1]["data"][0]["zwin"][0] > 0  # the window did slide
    first = attention.attention_figure(steps=trace.steps, step=0, layer=1, head=head, n_kv_heads=1, pieces=pieces, max_tokens=12, frame=12)
    T0 = trace.steps[0].position + 1  # at step 0 the frame is wider than the context: the positions to come have no token yet
    assert [x for x in first.data[0].x if not x.startswith("gap ")][T0:12] == [f"{k} ?" for k in range(T0, 12)] and T0 < 12


def test_frames_are_capped_and_the_bundle_says_so(trace):
    b = viewer_bundle(trace, max_frames=4)
    assert b["n_steps"] == 4 and b["n_steps_in_trace"] == 6 and len(b["sampling"]["steps"]) == 4
    assert all(len(p["frames"]) == 4 for p in b["panels"].values())


def test_long_contexts_shrink_the_attention_window_to_the_budget():
    from viz.viewer.attention import ATTN_CELLS, attention_window

    assert attention_window([40] * 24) == attention.MAX_TOKENS  # a short trace: the whole context
    w = attention_window(list(range(300, 556)))  # 256 steps of a long context
    assert 16 <= w < attention.MAX_TOKENS and 256 * w * w <= ATTN_CELLS
    w9 = attention_window(list(range(300, 556)), heads=9)  # every head of a grid counts
    assert w9 < w and 9 * 256 * w9 * w9 <= ATTN_CELLS


def test_sizes_are_measured_and_the_json_is_safe_in_html(bundle):
    sz = sizes(bundle)
    assert set(sz) == set(IDS) | {"sampling", "total"} and sz["total"] < 400_000
    text = bundle_json(bundle)
    assert "<" not in text and "</script" not in text.lower()
    assert json.loads(text) == json.loads(json.dumps(bundle))  # the same data, '<' written as \\u003c


def test_the_candidates_unmarked_labels_and_the_marks_viz_uses(trace):
    style = dist_style()
    b = viewer_bundle(trace)
    step = trace.steps[2]
    c = b["panels"]["dist-plot"]["candidates"][2]
    greedy = distribution.distribution_figure(step, temperature=0.0, vocab_size=50)  # keeps only the top token
    raw = greedy.data[0]
    removed = [k for k in range(20) if k != c["rank"] and k != 0]
    for k in removed:
        assert raw.y[k] == style["removed_label"].format(c["labels"][k])
        assert raw.customdata[k] == c["hover"][k] + style["removed_hover"]
        assert raw.marker.color[k] == style["removed_color"]
    assert raw.marker.color[0] == style["kept_color"] and raw.marker.color[-1] == style["rest_color"]
    line, label = greedy.layout.shapes[0].to_plotly_json(), greedy.layout.annotations[0].to_plotly_json()
    assert line == {**style["cut_line"], "y0": 0.5, "y1": 0.5}
    assert label == {**style["cut_label"], "y": 0.5}


def test_the_head_holds_top_k_ties_and_every_recorded_candidate():
    trace = make_trace(vocab=1500, n_steps=1, top_n=100, seed=3)
    step = trace.steps[0]
    x = np.round(step.logits * 4) / 4  # a coarse grid: many ties
    xs = x[sort_order(x)]
    ranks = np.arange(100)
    M = head_size(xs.astype(np.float32), ranks, head=1)
    assert M > TOP_K_MAX + 1  # the ties at the 200th place reach past the smallest head
    for t in TEMPERATURES[1:]:
        q = (xs / np.float32(t)).astype(np.float32)
        assert np.count_nonzero(q >= q[TOP_K_MAX - 1]) <= M
    d = step_tables(dataclasses.replace(step, logits=x.astype(np.float32)), head=1)
    # the head is the rest R (the context's tokens are shipped apart, `ctx`), as far as top-k's ties and min-p's reach
    ctx = np.unique(step.context_ids)
    r = np.setdiff1d(np.arange(x.size), ctx)
    xr = np.sort(x[r].astype(np.float32))[::-1]
    head, shipped = unpacked(d["head"]), unpacked(d["ctx"])
    assert d["V"] == 1500 and d["exact"] and len(head) == d["M"] and np.array_equal(head, xr[:d["M"]])
    assert np.array_equal(np.sort(shipped)[::-1], shipped) and np.array_equal(np.sort(shipped), np.sort(x[ctx].astype(np.float32)))
    assert d["M"] >= head_size(xr, np.arange(0), head=1) and d["M"] >= min_p_reach(xr) + 1
    ranks = unpacked(d["ranks"])  # a candidate of R by its place in the head, one of the context by -1 - its place in ctx
    for i, tid in enumerate(step.top_ids):
        assert (shipped[-1 - ranks[i]] if ranks[i] < 0 else head[ranks[i]]) == np.float32(x[tid])


def test_the_tables_are_the_same_from_a_short_prefix_of_the_sorted_vocabulary(monkeypatch):
    """Top-p's tables start from a prefix of the sorted tokens and grow it until the largest nucleus
    fits: the numbers are those of the whole vocabulary's cumulative sums, bit for bit."""
    from viz.viewer import sampling as vs

    trace = make_trace(vocab=6000, n_steps=2, top_n=50, seed=5)
    monkeypatch.setattr(vs, "PREFIX", 10**9)
    whole = [vs.step_tables(s) for s in trace.steps]
    monkeypatch.setattr(vs, "PREFIX", 1)  # from the head's end: the flat temperatures make it grow
    short = [vs.step_tables(s) for s in trace.steps]
    assert short == whole
    assert all(len(unpacked(t["tail"]["nR"])) > 0 for t in whole)  # nuclei past the head: the tail tables are used

    def reach(s):
        q = (np.asarray(s.logits, np.float32) / np.float32(2.0)).astype(np.float64)
        e = np.exp(q - q.max())
        return vs._prefix(e, sort_order(q), e.sum(), 512)[0].size
    assert min(reach(s) for s in trace.steps) > 512 + vs.GUARD  # at temperature 2 the prefix had to grow


def test_the_grids_are_the_apps_sliders():
    """One table of the grids (pipeline/sampling/grid.py): the page's sliders are made from it, the viewer's tables and a
    step's saved rest read it, and its positions are the ones every saved trace holds."""
    import gradio as gr

    from pipeline.sampling import rest
    from pipeline.sampling import grid as slider_grid
    from ui import layout
    from ui.views import Components

    C = Components()
    with gr.Blocks():
        layout._sampling(C)
    for name, g in (("temperature", slider_grid.TEMPERATURE), ("top_k", slider_grid.TOP_K), ("top_p", slider_grid.TOP_P),
                    ("min_p", slider_grid.MIN_P), ("repetition_penalty", slider_grid.REPETITION_PENALTY)):
        s = getattr(C, name)
        assert (s.minimum, s.maximum, s.step) == (g.lo, g.hi, g.step), name
    assert TEMPERATURES == tuple(round(0.05 * i, 2) for i in range(41)) and rest.GRID == TEMPERATURES[1:]  # (the trace format's)
    assert TOP_PS == tuple(round(0.01 * i, 2) for i in range(1, 101)) and TOP_K_MAX == 200
    from viz.viewer.sampling import MIN_PS, PENALTIES
    assert MIN_PS == tuple(round(0.01 * i, 2) for i in range(51)) and PENALTIES == tuple(round(1 + 0.05 * i, 2) for i in range(21))


def test_every_panel_carries_the_white_template_and_no_frame_does(bundle):
    """The template is plotly's default (viz.style), linked rather than copied per figure: each panel's
    figure still carries all of it, as Plotly.js needs; frames never repeat it."""
    import plotly.graph_objects as go
    import plotly.io as pio

    want = json.loads(go.Figure(layout=dict(template=pio.templates["plotly_white"])).to_json())["layout"]["template"]
    for pid, p in bundle["panels"].items():
        assert p["layout"]["template"] == want, pid
        assert all("template" not in f["layout"] for f in p["frames"]), pid
