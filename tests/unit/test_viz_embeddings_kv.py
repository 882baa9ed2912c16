"""Embeddings, KV cache / timing panels, captions, and the page glue on a synthetic trace."""
import subprocess
import sys

import numpy as np
import pytest

from tests.synthetic import make_trace
from viz import page, panels
from viz.captions import captions
from viz.embeddings import embeddings_figure
from viz.kv import kv_summary_html, kv_timing_figure
from viz.style import GEN_COLOR, PROMPT_COLOR


def _by_name(fig, prefix):
    return [d for d in fig.data if (d.name or "").startswith(prefix)]


@pytest.mark.parametrize("with_cloud", [True, False])
def test_embedding_axes_are_fixed_across_steps_and_hold_every_point(with_cloud):
    t = make_trace(n_steps=8)
    cloud = t.vocab_cloud if with_cloud else None
    figs = [embeddings_figure(prompt=t.prompt, steps=t.steps, step=s, cloud=cloud) for s in (None, 0, 2, 7)]
    ranges = {(f.layout.xaxis.range, f.layout.yaxis.range) for f in figs}
    assert len(ranges) == 1
    (xr, yr), = ranges
    pts = np.concatenate([t.prompt.embed_2d, np.array([s.embed_2d for s in t.steps])] + ([cloud.xy] if with_cloud else []))
    assert xr[0] < pts[:, 0].min() and pts[:, 0].max() < xr[1]
    assert yr[0] < pts[:, 1].min() and pts[:, 1].max() < yr[1]


def test_embedding_points_come_from_the_records():
    t = make_trace(n_steps=5)
    fig = embeddings_figure(prompt=t.prompt, steps=t.steps, step=3, cloud=t.vocab_cloud)
    (cloud,) = _by_name(fig, "vocabulary")
    np.testing.assert_array_equal(np.c_[cloud.x, cloud.y], t.vocab_cloud.xy)
    (prompt,) = _by_name(fig, "prompt")
    np.testing.assert_array_equal(np.c_[prompt.x, prompt.y], t.prompt.embed_2d)
    (gen,) = _by_name(fig, "generated")
    np.testing.assert_array_equal(np.c_[gen.x, gen.y], np.array([s.embed_2d for s in t.steps[:3]]))
    (new,) = _by_name(fig, "newest")
    assert (new.x[0], new.y[0]) == tuple(float(v) for v in t.steps[3].embed_2d)
    assert new.marker.size > gen.marker.size
    text = "".join(cloud.hovertext) + "".join(prompt.hovertext) + "".join(prompt.text)
    assert "&lt;script&gt;" in text and "<script>" not in text and "↵" in text


def test_embedding_labels_are_capped_distinct_and_cloud_is_optional():
    t = make_trace(vocab=400, prompt_len=100, n_steps=3)
    fig = embeddings_figure(prompt=t.prompt, steps=t.steps, step=2, cloud=None, max_labels=60)
    assert not _by_name(fig, "vocabulary")
    (prompt,) = _by_name(fig, "prompt")
    (gen,) = _by_name(fig, "generated")
    (new,) = _by_name(fig, "newest")
    ids = list(t.prompt.token_ids) + [s.token_id for s in t.steps[:3]]
    text = list(prompt.text) + list(gen.text) + list(new.text)
    labelled = [k for k, x in enumerate(text) if x]
    assert len(labelled) == 60
    assert len({ids[k] for k in labelled}) == 60  # one label per distinct token (repeats share a point)
    # the most recent occurrence of each token is the one labelled
    assert all(ids[k] not in ids[k + 1:] for k in labelled) and text[-1] and not text[0]


def test_kv_figure_plots_the_recorded_bytes_and_times():
    t = make_trace(n_steps=6)
    fig = kv_timing_figure(steps=t.steps, step=3, model=t.model)
    (measured,) = _by_name(fig, "measured")
    (formula,) = _by_name(fig, "formula")
    assert list(measured.y) == [s.kv_cache_bytes for s in t.steps]
    assert list(formula.y) == [s.kv_cache_bytes_formula for s in t.steps]
    (cur,) = _by_name(fig, "step on screen")  # its legend entry; the ring is a shape at the step's bytes
    (ring,) = [sh for sh in fig.layout.shapes if sh.type == "circle"]
    assert (ring.xanchor, ring.yanchor, ring.xref, ring.yref) == (3, t.steps[3].kv_cache_bytes, "x", "y")
    assert "in each of 2 layers" in measured.customdata[0]
    (bars,) = [d for d in fig.data if d.type == "bar"]
    assert list(bars.y) == [s.ms for s in t.steps]
    assert list(bars.marker.color) == [PROMPT_COLOR] + [GEN_COLOR] * 5
    (box,) = [sh for sh in fig.layout.shapes if sh.type == "rect"]  # the step's bar outlined
    assert (box.xref, box.yref, box.y1) == ("x2", "y2", t.steps[3].ms) and box.x0 < 3 < box.x1
    notes = "".join(a.text for a in fig.layout.annotations)
    med = float(np.median([s.ms for s in t.steps[1:]]))
    assert f"prefill: {t.steps[0].ms:.0f} ms for {t.steps[0].position + 1} tokens" in notes
    assert f"decode: median {med:.1f} ms/token = {1000 / med:.1f} tokens/s" in notes
    assert fig.layout.xaxis.range == (-0.5, 5.5)


def test_kv_summary_spells_out_the_formula_with_the_models_numbers():
    t = make_trace(n_layers=3, n_kv_heads=2, n_heads=4, n_steps=3)
    st = t.steps[2]
    P = st.position + 1
    out = kv_summary_html(steps=t.steps, step=2, model=t.model)
    assert f"<b>{P:,} positions</b>" in out
    assert f"2 (keys and values) × 3 layers × 2 KV heads × 8 numbers per head × {P:,} positions × 4 bytes (float32)" in out
    assert f"= <b>{st.kv_cache_bytes_formula:,} bytes</b>" in out and st.kv_cache_bytes_formula == 2 * 3 * 2 * 8 * P * 4
    assert f"({st.kv_cache_bytes:,} bytes)" in out
    assert "4 query heads share 2 KV heads" in out


def test_captions_cover_every_panel_accurately():
    for key in ("intro", "output", "tokens", "embeddings", "attention", "distribution", "kv"):
        assert len(captions()[key]) > 80
    assert "smallest set of most likely tokens" in captions()["distribution"]
    assert "one parallel pass" in captions()["kv"] and "reuses" in captions()["kv"]


@pytest.fixture
def no_tiktoken(monkeypatch):
    monkeypatch.setattr(panels, "_compare", lambda text: (("Other <tok>", list(text), list(range(len(text)))),))


def test_page_renders_every_panel_without_raw_markup(no_tiktoken):
    t = make_trace(n_steps=4)
    out = page.render(t, step=2, layer=1, head="all", temperature=0.8, top_k=0, top_p=0.9)
    assert set(out) == set(page.PANEL_KEYS)
    for k, v in out.items():
        s = v if isinstance(v, str) else v.to_json()
        assert "<script>" not in s and "<img src" not in s, k
    light = page.render(t, step=99, layer=0, head="1", temperature=1.0, top_k=0, top_p=1.0, heavy=False)
    assert set(light) == {"output", "tokens", "dist"} == {p.key for p in panels.PANELS if not p.heavy}


def test_page_passes_the_traces_repetition_penalty():
    t = make_trace(repetition_penalty=1.4, temperature=0.8, top_p=0.9)
    fig = page.distribution_only(t, step=1, temperature=0.8, top_k=0, top_p=0.9)
    assert "approximate" not in fig.layout.title.text
    np.testing.assert_allclose(fig.data[1].x[:20], t.steps[1].top_final_probs[:20])


def test_viz_imports_neither_torch_nor_gradio():
    code = ("import sys, viz.page, viz.captions, viz.style; "
            "bad = [m for m in ('torch', 'gradio', 'transformers') if m in sys.modules]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_single_step_trace_draws_every_panel(no_tiktoken):
    t = make_trace(n_steps=1)
    out = page.render(t, step=0, layer=0, head="all", temperature=0.8, top_k=0, top_p=0.9)
    assert set(out) == set(page.PANEL_KEYS)
    notes = "".join(a.text for a in out["kv"].layout.annotations)
    assert "prefill:" in notes and "decode:" not in notes
    assert "stopped: reached the maximum number of new tokens" in out["output"]
